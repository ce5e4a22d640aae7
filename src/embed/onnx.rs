//! The ONNX embedder (ONNX Runtime, loaded dynamically; one tokenizer for
//! all its sessions, see [`super::session`]).
//!
//! # Assets
//! [`OnnxEmbedder::load`] reads everything from an asset root (see
//! [`super::assets`]): the ONNX Runtime shared library, the ONNX graph and the
//! tokenizer files. It first runs the cheap [`assets::verify_models`] check, so
//! missing or truncated assets give [`Error::Unavailable`] naming the files and
//! saying to run `mnemo setup` — never a panic, and nothing is downloaded at
//! run time.
//!
//! # ONNX Runtime
//! The runtime library is loaded once per process with `ort::init_from` (the
//! `ORT_DYLIB_PATH` route panics on a missing library; this one returns an
//! error, which becomes [`Error::Unavailable`]). The first successful load wins
//! for the life of the process; loading it from a second path is refused.
//!
//! # Threading
//! Embedding is CPU-bound and **blocking** (≈1 ms per query, tens of ms per
//! batch): call it from `tokio::task::spawn_blocking` or a dedicated thread,
//! never on the async runtime's threads. Each session runs with one intra-op
//! thread by default and with thread spinning off
//! (`session.intra_op.allow_spinning = 0`): on a small shared machine spinning
//! threads steal CPU from everything else and more than doubled single-query
//! latency in measurements. Parallelism comes from a pool of sessions
//! ([`super::pool`]), each behind a mutex because ONNX Runtime's `run` takes
//! `&mut self` in `ort`; a batch is tokenised before its session is taken: *bulk* sessions (default one per core) and one session
//! *reserved* for queries. `embed_passages` sorts its texts by length, cuts
//! them into batches of [`EmbedderOptions::batch_size`] and embeds the
//! batches on every bulk session at once (restoring the caller's order); a
//! query takes the reserved session, so a search never waits behind a bulk
//! ingest's batch.
//!
//! # Query cache
//! Agents repeat queries; `embed_query` keeps the last
//! [`EmbedderOptions::query_cache_size`] query vectors in a small LRU keyed by
//! (model id, text), behind its own short mutex (never held while embedding).
//! Stored passages are not cached (the embedding cache of the ingest path
//! covers them).

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use fastembed::{Pooling, TokenizerFiles};
use ort::environment::Environment;
use parking_lot::Mutex;

use super::assets::{self, AssetPaths, ModelSpec, PoolingKind};
use super::error::{bad_output, EmbedError};
use super::pool::{self, Pool};
use super::session::{load_tokenizer, Encoded, ModelSession};
use super::Embedder;
use crate::domain::script::is_cjk;
use crate::error::{Error, Result};

/// How to run the model.
#[derive(Debug, Clone)]
pub struct EmbedderOptions {
    pub model: &'static ModelSpec,
    /// ONNX Runtime intra-op threads per session (default 1).
    pub threads_per_session: usize,
    /// Bulk sessions: batches of `embed_passages` that run at once (default:
    /// the number of cores).
    pub pool_size: usize,
    /// Sessions only queries use (default 1; 0 lets queries share the bulk
    /// sessions and wait behind their batches).
    pub query_sessions: usize,
    /// Passages per model call in `embed_passages` (default 32).
    pub batch_size: usize,
    /// Query vectors kept by `embed_query` (LRU; 0 turns the cache off;
    /// default 1024, about 1.6 MB at 384 dimensions).
    pub query_cache_size: usize,
}

impl Default for EmbedderOptions {
    fn default() -> Self {
        EmbedderOptions {
            model: assets::default_model(),
            threads_per_session: 1,
            pool_size: default_pool_size(),
            query_sessions: 1,
            batch_size: 32,
            query_cache_size: 1024,
        }
    }
}

impl EmbedderOptions {
    /// The options a policy asks for: its `[embedding] model` and
    /// `query_cache_size`, and `[indexing] embed_batch`; the rest default.
    pub fn for_policy(policy: &crate::policy::Policy) -> Result<Self> {
        Ok(EmbedderOptions {
            model: policy.embedding.model_spec()?,
            batch_size: policy.indexing.embed_batch,
            query_cache_size: policy.embedding.query_cache_size,
            ..EmbedderOptions::default()
        })
    }
}

/// One bulk session per core (at least 1).
pub fn default_pool_size() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Real embeddings from an ONNX model; vectors are L2-normalised.
pub struct OnnxEmbedder {
    model: &'static ModelSpec,
    sessions: Pool<ModelSession>,
    batch_size: usize,
    queries: Option<QueryCache>,
    /// The vocabulary's unknown token (`[UNK]`, `<unk>`), if it has one.
    unk_id: Option<u32>,
    /// The model's tokenizer, outside the sessions: tokenising for a helper
    /// (`known_token_share`, `token_ids`) must not wait for a session, which
    /// under load means waiting for another search's embedding.
    tokenizer: tokenizers::Tokenizer,
}

impl std::fmt::Debug for OnnxEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnnxEmbedder")
            .field("model_id", &self.model.model_id)
            .field("bulk_sessions", &self.sessions.bulk_len())
            .field("query_sessions", &self.sessions.reserved_len())
            .field("batch_size", &self.batch_size)
            .finish()
    }
}

/// The process-wide ONNX Runtime: the library path it was loaded from and the
/// environment every session uses (or why loading failed).
static RUNTIME: OnceLock<std::result::Result<(PathBuf, Environment), String>> = OnceLock::new();

/// Loads ONNX Runtime from `lib` once per process. The path is checked before
/// the process-global state is touched, so a missing library is a plain error.
fn init_runtime(lib: &Path) -> Result<Environment> {
    check_runtime_path(lib)?;
    let lib = lib.canonicalize()?;
    let loaded = RUNTIME.get_or_init(|| {
        let attempt = std::panic::catch_unwind(|| {
            ort::init_from(&lib)
                .map_err(|e| e.to_string())?
                .with_name("mnemo")
                .with_telemetry(false)
                .build()
                .map_err(|e| e.to_string())
        });
        match attempt {
            Ok(Ok(env)) => {
                tracing::info!(path = %lib.display(), "loaded ONNX Runtime");
                Ok((lib.clone(), env))
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err("ONNX Runtime panicked while loading".to_string()),
        }
    });
    match loaded {
        Ok((path, env)) if *path == lib => Ok(env.clone()),
        Ok((path, _)) => Err(Error::Unavailable(format!(
            "ONNX Runtime is already loaded from {} in this process; cannot also load {}",
            path.display(),
            lib.display()
        ))),
        Err(e) => Err(Error::Unavailable(format!(
            "could not load ONNX Runtime from {}: {e}; run `mnemo setup` (or `make setup`) \
             to fetch a working copy (needs glibc >= 2.28 and libstdc++)",
            lib.display()
        ))),
    }
}

/// The runtime library must be a file; checked before anything process-global.
fn check_runtime_path(lib: &Path) -> Result<()> {
    if lib.is_file() {
        Ok(())
    } else {
        Err(Error::Unavailable(format!(
            "the ONNX Runtime library {} is missing; run `mnemo setup` (or `make setup`) \
             to fetch it",
            lib.display()
        )))
    }
}

impl OnnxEmbedder {
    /// The embedder of the policy's `[embedding] model`, from the asset
    /// directory `mnemo setup` filled, shared.
    pub fn for_policy(
        assets_dir: &std::path::Path,
        policy: &crate::policy::Policy,
    ) -> Result<std::sync::Arc<dyn Embedder>> {
        let options = EmbedderOptions::for_policy(policy)?;
        Ok(std::sync::Arc::new(Self::load(
            &AssetPaths::new(assets_dir),
            options,
        )?))
    }

    /// Verifies the assets (cheaply), loads ONNX Runtime once per process and
    /// builds `options.pool_size` sessions. Blocking (≈0.1–0.5 s per session).
    pub fn load(paths: &AssetPaths, options: EmbedderOptions) -> Result<Self> {
        Self::load_with_graph(paths, options, None)
    }

    /// As [`load`](Self::load), running `onnx` (a graph of the same model,
    /// e.g. one built in-process by a benchmark) instead of the model's file
    /// when given.
    pub fn load_with_graph(
        paths: &AssetPaths,
        options: EmbedderOptions,
        onnx: Option<Vec<u8>>,
    ) -> Result<Self> {
        let model = options.model;
        check_runtime_path(&paths.runtime_lib())?;
        assets::verify_models(paths.root(), &[model], false)?;
        let env = init_runtime(&paths.runtime_lib())?;

        let read = |name: &str| -> Result<Vec<u8>> {
            let path = paths.model_file(model, name);
            std::fs::read(&path).map_err(|e| {
                Error::Unavailable(format!(
                    "cannot read {} ({e}); run `mnemo setup` (or `make setup`)",
                    path.display()
                ))
            })
        };
        let onnx = match onnx {
            Some(graph) => graph,
            None => read(model.onnx_file)?,
        };
        let tokenizer_files = TokenizerFiles {
            tokenizer_file: read(model.tokenizer_file)?,
            config_file: read(model.config_file)?,
            special_tokens_map_file: read(model.special_tokens_map_file)?,
            tokenizer_config_file: read(model.tokenizer_config_file)?,
        };
        let pooling = match model.pooling {
            PoolingKind::Mean => Pooling::Mean,
            PoolingKind::Cls => Pooling::Cls,
        };

        let pool_size = options.pool_size.max(1);
        let threads = options.threads_per_session.max(1);
        // One tokenizer for every session (`session.rs` says why).
        let tokenizer = load_tokenizer(&tokenizer_files, model.max_length)?;
        let mut sessions = Vec::with_capacity(pool_size + options.query_sessions);
        for _ in 0..pool_size + options.query_sessions {
            sessions.push(
                ModelSession::new(&env, &onnx, threads, pooling.clone()).map_err(|e| {
                    EmbedError::Model {
                        context: format!("loading model {}", model.model_id),
                        source: e.into(),
                    }
                })?,
            );
        }
        drop(onnx);
        let unk_id = tokenizer
            .token_to_id("[UNK]")
            .or_else(|| tokenizer.token_to_id("<unk>"));
        let query = sessions.split_off(pool_size);
        let embedder = OnnxEmbedder {
            model,
            unk_id,
            sessions: Pool::new(sessions, query),
            batch_size: options.batch_size.max(1),
            queries: NonZeroUsize::new(options.query_cache_size).map(QueryCache::new),
            tokenizer,
        };
        // Catch a wrong graph (output size) now rather than at the first request.
        let probe = embedder.run(|| embedder.sessions.query(), vec!["probe".to_string()])?;
        if probe[0].len() != model.dim {
            return Err(bad_output(format!(
                "model {} produced {} dimensions, expected {}",
                model.model_id,
                probe[0].len(),
                model.dim
            )));
        }
        Ok(embedder)
    }

    pub fn model(&self) -> &'static ModelSpec {
        self.model
    }

    /// Query vectors held by the query cache (0 when it is off).
    pub fn cached_queries(&self) -> usize {
        self.queries.as_ref().map_or(0, |c| c.0.lock().len())
    }

    /// The token ids the model is fed for `text` as a query (or a stored
    /// passage), prefix and special tokens included; for tests and diagnostics.
    pub fn token_ids(&self, text: &str, query: bool) -> Result<Vec<u32>> {
        let prefix = if query {
            self.model.query_prefix
        } else {
            self.model.passage_prefix
        };
        let encoding = self
            .tokenizer
            .encode(format!("{prefix}{text}"), true)
            .map_err(EmbedError::Tokenizer)?;
        Ok(encoding.get_ids().to_vec())
    }

    /// Tokenises `texts`, then runs them on the session `take` gives (taken
    /// only for the model call).
    fn run<S: std::ops::DerefMut<Target = ModelSession>>(
        &self,
        take: impl FnOnce() -> S,
        texts: Vec<String>,
    ) -> Result<Vec<Vec<f32>>> {
        let count = texts.len();
        let batch = Encoded::new(&self.tokenizer, texts)?;
        if batch.len() != count {
            return Err(bad_output(format!(
                "the tokenizer returned {} encodings for {count} texts",
                batch.len()
            )));
        }
        let mut vectors = take().run(batch)?;
        if vectors.len() != count {
            return Err(bad_output(format!(
                "model returned {} vectors for {count} texts",
                vectors.len()
            )));
        }
        for v in &mut vectors {
            if v.len() != self.model.dim {
                return Err(bad_output(format!(
                    "model returned a vector of {} dimensions, expected {}",
                    v.len(),
                    self.model.dim
                )));
            }
            l2_normalise(v);
        }
        Ok(vectors)
    }
}

/// The last query vectors, keyed by (model id, text).
struct QueryCache(Mutex<lru::LruCache<(&'static str, String), Vec<f32>>>);

impl QueryCache {
    fn new(capacity: NonZeroUsize) -> Self {
        QueryCache(Mutex::new(lru::LruCache::new(capacity)))
    }

    /// The cached vector, or `embed`'s (cached when it succeeds). The lock is
    /// not held while embedding: two callers may embed the same new text once
    /// each, which is harmless (same vector).
    fn get_or_embed(
        &self,
        model_id: &'static str,
        text: &str,
        embed: impl FnOnce() -> Result<Vec<f32>>,
    ) -> Result<Vec<f32>> {
        let key = (model_id, text.to_string());
        if let Some(v) = self.0.lock().get(&key) {
            return Ok(v.clone());
        }
        let v = embed()?;
        self.0.lock().put(key, v.clone());
        Ok(v)
    }
}

fn l2_normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

impl Embedder for OnnxEmbedder {
    fn model_id(&self) -> &str {
        self.model.model_id
    }

    fn dim(&self) -> usize {
        self.model.dim
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        let embed = || {
            let text = format!("{}{text}", self.model.query_prefix);
            let mut out = self.run(|| self.sessions.query(), vec![text])?;
            Ok(out.pop().expect("one vector per text"))
        };
        match &self.queries {
            Some(cache) => cache.get_or_embed(self.model.model_id, text, embed),
            None => embed(),
        }
    }

    fn known_token_share(&self, text: &str) -> f32 {
        if self.unk_id.is_none() && self.model.reads_cjk {
            return 1.0;
        }
        // Without prefix and special tokens: only the text's own tokens.
        let Ok(encoding) = self.tokenizer.encode(text, false) else {
            return 1.0;
        };
        let ids = encoding.get_ids();
        if ids.is_empty() {
            return 1.0;
        }
        let unknown = ids
            .iter()
            .zip(encoding.get_tokens())
            .filter(|(id, token)| {
                Some(**id) == self.unk_id || (!self.model.reads_cjk && token.chars().any(is_cjk))
            })
            .count();
        1.0 - unknown as f32 / ids.len() as f32
    }

    fn embed_passages(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let workers = self.sessions.bulk_len();
        pool::embed_bulk(texts, self.batch_size, workers, |chunk| {
            let batch = chunk
                .iter()
                .map(|t| format!("{}{t}", self.model.passage_prefix))
                .collect();
            // The session is taken after the texts are tokenised, and only
            // for the model call.
            self.run(|| self.sessions.bulk(), batch)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;
    use std::time::Instant;

    use super::*;
    use crate::embed::assets::tests::test_assets;

    fn embedder() -> &'static OnnxEmbedder {
        static E: OnceLock<OnnxEmbedder> = OnceLock::new();
        E.get_or_init(|| {
            let options = EmbedderOptions {
                model: &assets::MINILM_L6_V2,
                ..EmbedderOptions::default()
            };
            OnnxEmbedder::load(&test_assets(), options)
                .expect("the real embedder loads from the test assets")
        })
    }

    fn dot(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    /// The sessions of `session.rs` give fastembed's vectors (what every
    /// index was built with until they replaced it): the same token ids and,
    /// batch for batch, the same vectors, on English, Chinese and mixed text,
    /// for both models. One tokenizer now serves every session.
    #[test]
    fn vectors_and_token_ids_are_fastembeds() {
        use fastembed::{InitOptionsUserDefined, TextEmbedding, UserDefinedEmbeddingModel};
        let texts: Vec<String> = [
            "The user prefers green tea in the morning.",
            "我对花生过敏，不吃香菜。",
            "Meeting with 王经理 next Tuesday about the Q3 report",
            "ok",
            "A much longer sentence about a dentist appointment that was moved from \
             Monday to Friday because the clinic was closed for the public holiday.",
        ]
        .iter()
        .map(|t| format!("passage: {t}"))
        .collect();
        let paths = test_assets();
        for model in [&assets::MINILM_L6_V2, &assets::MULTILINGUAL_E5_SMALL] {
            let ours = OnnxEmbedder::load(
                &paths,
                EmbedderOptions {
                    model,
                    pool_size: 1,
                    query_sessions: 1,
                    query_cache_size: 0,
                    ..EmbedderOptions::default()
                },
            )
            .expect("the real embedder loads from the test assets");
            let read = |name: &str| std::fs::read(paths.model_file(model, name)).unwrap();
            let files = TokenizerFiles {
                tokenizer_file: read(model.tokenizer_file),
                config_file: read(model.config_file),
                special_tokens_map_file: read(model.special_tokens_map_file),
                tokenizer_config_file: read(model.tokenizer_config_file),
            };
            let pooling = match model.pooling {
                PoolingKind::Mean => Pooling::Mean,
                PoolingKind::Cls => Pooling::Cls,
            };
            let mut theirs = TextEmbedding::try_new_from_user_defined(
                UserDefinedEmbeddingModel::new(read(model.onnx_file), files).with_pooling(pooling),
                InitOptionsUserDefined::new()
                    .with_environment(init_runtime(&paths.runtime_lib()).unwrap())
                    .with_max_length(model.max_length)
                    .with_intra_threads(1)
                    .with_session_config("session.intra_op.allow_spinning", "0"),
            )
            .unwrap();
            let ids = |t: &tokenizers::Tokenizer| -> Vec<Vec<u32>> {
                t.encode_batch(texts.clone(), true)
                    .unwrap()
                    .iter()
                    .map(|e| e.get_ids().to_vec())
                    .collect()
            };
            assert_eq!(
                ids(&ours.tokenizer),
                ids(&theirs.tokenizer),
                "{}",
                model.name
            );
            // One batch each way (the int8 graphs quantise per call), and each
            // text alone.
            let mut batches = vec![texts.clone()];
            batches.extend(texts.iter().map(|t| vec![t.clone()]));
            for batch in batches {
                let a = ours.run(|| ours.sessions.query(), batch.clone()).unwrap();
                let b = theirs.embed(batch.clone(), None).unwrap();
                assert_eq!(a.len(), b.len());
                for (x, mut y) in a.into_iter().zip(b) {
                    l2_normalise(&mut y);
                    let worst = x
                        .iter()
                        .zip(&y)
                        .map(|(p, q)| (p - q).abs())
                        .fold(0.0, f32::max);
                    assert!(
                        worst <= 1e-6,
                        "{}: {batch:?} differs from fastembed by {worst}",
                        model.name
                    );
                }
            }
        }
    }

    #[test]
    fn query_cache_is_a_bounded_lru_keyed_by_model_and_text() {
        let cache = QueryCache::new(NonZeroUsize::new(2).unwrap());
        let calls = std::cell::Cell::new(0);
        let embed = |x: f32| {
            calls.set(calls.get() + 1);
            Ok(vec![x])
        };
        assert_eq!(cache.get_or_embed("m", "a", || embed(1.0)).unwrap(), [1.0]);
        assert_eq!(cache.get_or_embed("m", "a", || embed(9.0)).unwrap(), [1.0]);
        assert_eq!(calls.get(), 1, "a repeated query is not embedded again");
        // Another model's vector for the same text is a different entry.
        assert_eq!(cache.get_or_embed("n", "a", || embed(2.0)).unwrap(), [2.0]);
        // "m/a" was used least recently: a third entry evicts it, not "n/a".
        cache.get_or_embed("m", "b", || embed(3.0)).unwrap();
        assert_eq!(cache.get_or_embed("n", "a", || embed(8.0)).unwrap(), [2.0]);
        assert_eq!(cache.get_or_embed("m", "a", || embed(4.0)).unwrap(), [4.0]);
        assert_eq!(calls.get(), 4);
        // Failures are not cached.
        let err = cache.get_or_embed("m", "c", || Err(bad_output("boom".into())));
        assert!(err.is_err());
        assert_eq!(cache.get_or_embed("m", "c", || embed(5.0)).unwrap(), [5.0]);
        assert_eq!(cache.0.lock().len(), 2, "bounded");
    }

    #[test]
    fn the_policy_sizes_the_query_cache_and_zero_turns_it_off() {
        let mut policy = crate::policy::Policy::default();
        assert_eq!(
            EmbedderOptions::for_policy(&policy)
                .unwrap()
                .query_cache_size,
            1024,
            "the shipped default"
        );
        policy.embedding.model = assets::MINILM_L6_V2.name.into();
        policy.indexing.embed_batch = 8;
        for (size, held) in [(2, 2), (0, 0)] {
            policy.embedding.query_cache_size = size;
            let options = EmbedderOptions {
                pool_size: 1,
                query_sessions: 0,
                ..EmbedderOptions::for_policy(&policy).unwrap()
            };
            assert_eq!((options.batch_size, options.query_cache_size), (8, size));
            let e = OnnxEmbedder::load(&test_assets(), options).unwrap();
            let first = e.embed_query("green tea").unwrap();
            for q in ["green tea", "black coffee", "a walk", "green tea"] {
                e.embed_query(q).unwrap();
            }
            assert_eq!(e.cached_queries(), held, "query_cache_size {size}");
            // Cached or not, the vector is the same.
            assert_eq!(e.embed_query("green tea").unwrap(), first);
        }
    }

    #[test]
    fn missing_assets_are_unavailable_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let err = OnnxEmbedder::load(&AssetPaths::new(dir.path()), EmbedderOptions::default())
            .unwrap_err();
        match err {
            Error::Unavailable(m) => {
                assert!(m.contains("libonnxruntime.so.1.31.1"), "{m}");
                assert!(m.contains("mnemo setup"), "{m}");
            }
            other => panic!("expected Unavailable, got {other:?}"),
        }
        // The path check alone, as init_runtime runs it before touching ort.
        assert!(matches!(
            init_runtime(&dir.path().join("nope.so")),
            Err(Error::Unavailable(_))
        ));
    }

    #[test]
    fn model_files_missing_is_unavailable() {
        // A runtime library present but no model: the asset check fails first.
        let dir = tempfile::tempdir().unwrap();
        let paths = AssetPaths::new(dir.path());
        std::fs::create_dir_all(paths.runtime_lib().parent().unwrap()).unwrap();
        std::fs::write(paths.runtime_lib(), b"not really a library").unwrap();
        let err = OnnxEmbedder::load(&paths, EmbedderOptions::default()).unwrap_err();
        assert!(
            matches!(&err, Error::Unavailable(m) if m.contains("mnemo setup")),
            "{err:?}"
        );
    }

    #[test]
    fn minilm_knows_english_tokens_and_not_most_chinese_ones() {
        let e = embedder();
        assert!(e.unk_id.is_some());
        assert_eq!(e.known_token_share("Where do I live these days?"), 1.0);
        // Its vocabulary holds many Chinese characters (BERT's), but the
        // model never learnt them: none of them counts as known.
        let zh = e.known_token_share("我现在住在哪个城市？");
        assert!(zh < 0.2, "{zh}");
        assert!(e.known_token_share("2010年决赛在哪里举行") < 0.2);
        let mixed = e.known_token_share("下周三的 client meeting 在哪个城市？");
        assert!(mixed > zh && mixed < 1.0, "{mixed}");
        assert_eq!(e.known_token_share(""), 1.0);
    }

    #[test]
    fn ranks_the_relevant_memory_first() {
        let e = embedder();
        assert_eq!(e.dim(), 384);
        assert_eq!(e.model_id(), assets::MINILM_L6_V2.model_id);
        let memories = [
            "The user prefers green tea",
            "The user's laptop runs Arch Linux",
            "The meeting with the landlord is on Tuesday",
            "The user has a dog named Biscuit",
            "The deployment pipeline uses GitHub Actions",
            "The user lives in Lisbon",
        ];
        let q = e.embed_query("what drink does the user like").unwrap();
        let vs = e.embed_passages(&memories).unwrap();
        let scores: Vec<f32> = vs.iter().map(|v| dot(&q, v)).collect();
        let best = scores
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .unwrap()
            .0;
        assert_eq!(best, 0, "scores: {scores:?}");
        assert!(
            scores[1..].iter().all(|s| scores[0] - s > 0.1),
            "scores: {scores:?}"
        );
    }

    #[test]
    fn deterministic_normalised_and_empty() {
        let e = embedder();
        let a = e.embed_query("The user prefers green tea").unwrap();
        let b = e.embed_query("The user prefers green tea").unwrap();
        assert_eq!(a, b);
        let norm = dot(&a, &a).sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
        assert!(e.embed_passages(&[]).unwrap().is_empty());
        // No prefixes for MiniLM: a query and a passage of the same text agree.
        let p = e.embed_passages(&["The user prefers green tea"]).unwrap();
        assert!(dot(&a, &p[0]) > 0.9999);
    }

    #[test]
    fn batch_of_40_equals_one_by_one() {
        let e = embedder();
        let texts: Vec<String> = (0..40)
            .map(|i| {
                format!(
                    "Memory number {i}: the user mentioned {} things about {}",
                    i * 3,
                    ["tea", "rust", "hiking", "music", "taxes"][i % 5].repeat(1 + i % 4)
                )
            })
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let batch = e.embed_passages(&refs).unwrap();
        assert_eq!(batch.len(), 40);
        for (t, v) in refs.iter().zip(&batch) {
            let single = e.embed_passages(&[t]).unwrap().pop().unwrap();
            // The int8 graph quantises activations per batch (one range for
            // the whole input), so a text's vector depends slightly on its
            // batch companions; the fp32 graphs agree to 1e-4.
            let cos = dot(v, &single);
            assert!(cos > 0.985, "cosine {cos} for {t:?}");
            assert!((dot(v, v).sqrt() - 1.0).abs() < 1e-4);
        }
    }

    #[test]
    fn embeds_from_several_threads() {
        let e = embedder();
        let expected = e.embed_query("green tea").unwrap();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..5 {
                        assert!(dot(&e.embed_query("green tea").unwrap(), &expected) > 0.9999);
                    }
                });
            }
        });
    }

    /// CPU seconds used by this process so far (user + system), from
    /// /proc/self/stat: wall-clock figures on a shared machine mostly measure
    /// the neighbours.
    fn cpu_secs() -> f64 {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let f: Vec<f64> = after
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(0.0))
            .collect();
        // utime and stime are fields 14 and 15 (11 and 12 after the name).
        (f.get(11).copied().unwrap_or(0.0) + f.get(12).copied().unwrap_or(0.0)) / 100.0
    }

    /// `cargo test --lib embed::onnx::tests::bench -- --ignored --nocapture`;
    /// `MNEMO_EMBEDDING_MODEL=multilingual-e5-small` benchmarks that model.
    #[test]
    #[ignore]
    fn bench() {
        let model = std::env::var("MNEMO_EMBEDDING_MODEL")
            .ok()
            .and_then(|m| assets::model_by_name(&m))
            .unwrap_or(assets::default_model());
        let options = EmbedderOptions {
            model,
            ..EmbedderOptions::default()
        };
        let e = &OnnxEmbedder::load(&test_assets(), options).unwrap();
        eprintln!("model {}", e.model_id());
        let words = [
            "user", "prefers", "green", "tea", "meeting", "tuesday", "project", "deadline",
            "laptop", "linux", "dog", "walk", "morning", "coffee", "report", "budget", "travel",
            "lisbon", "friend", "birthday", "music", "guitar", "recipe", "pasta",
        ];
        let sentence = |i: usize| -> String {
            (0..20)
                .map(|j| words[(i * 7 + j * 13 + j * j) % words.len()])
                .collect::<Vec<_>>()
                .join(" ")
        };
        for i in 0..10 {
            e.embed_query(&sentence(i)).unwrap();
        }
        let cpu = cpu_secs();
        let mut times: Vec<f64> = (0..200)
            .map(|i| {
                let q = sentence(1000 + i);
                let t = Instant::now();
                e.embed_query(&q).unwrap();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        times.sort_by(f64::total_cmp);
        eprintln!(
            "single query (~20 words, 1 thread): p50 {:.2} ms, p95 {:.2} ms, max {:.2} ms",
            times[100], times[190], times[199]
        );
        eprintln!(
            "single query CPU time: {:.2} ms per query (mean)",
            (cpu_secs() - cpu) * 1e3 / 200.0
        );
        let cpu = cpu_secs();
        for i in 0..200 {
            e.tokenizer.encode(sentence(1000 + i), true).unwrap();
        }
        eprintln!(
            "of which tokenising: {:.3} ms CPU per query",
            (cpu_secs() - cpu) * 1e3 / 200.0
        );
        let passages: Vec<String> = (0..1000).map(sentence).collect();
        let refs: Vec<&str> = passages.iter().map(String::as_str).collect();
        let cpu = cpu_secs();
        let t = Instant::now();
        let out = e.embed_passages(&refs).unwrap();
        let secs = t.elapsed().as_secs_f64();
        let cpu = cpu_secs() - cpu;
        assert_eq!(out.len(), 1000);
        eprintln!(
            "passages: 1000 x ~20 words in batches of 32 on one caller: {:.2} s, {:.0} passages/s \
             ({:.2} CPU s, {:.0} passages per CPU s)",
            secs,
            1000.0 / secs,
            cpu,
            1000.0 / cpu
        );
        let t = Instant::now();
        std::thread::scope(|s| {
            for half in refs.chunks(500) {
                s.spawn(move || e.embed_passages(half).unwrap());
            }
        });
        let secs = t.elapsed().as_secs_f64();
        eprintln!(
            "passages: 1000 split over 2 callers (pool of 2): {:.2} s, {:.0} passages/s",
            secs,
            1000.0 / secs
        );
    }
}
