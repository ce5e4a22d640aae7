//! The memory policy: every tunable of ranking, limits and lifecycle, read from
//! `memory_policies.toml`, strictly typed (`deny_unknown_fields`) and validated
//! into a [`Policy`] that cannot hold an out-of-range value. Defaults live in
//! `Default` impls and equal the shipped file (a test checks).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::domain::ranking::{FusionMethod, RankingParams};
use crate::domain::validate::Limits;
use crate::domain::{Kind, Memory, Tier};
use crate::error::{Error, Result};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Policy {
    /// The file's format version (`version = 1`); a file without one is
    /// version 1, a file of another version is refused.
    pub version: PolicyVersion,
    pub limits: LimitsPolicy,
    pub retrieval: RetrievalPolicy,
    pub decay: DecayPolicy,
    pub defaults: DefaultsPolicy,
    pub indexing: IndexingPolicy,
    pub reference: ReferencePolicy,
    pub context: ContextPolicy,
    pub lifecycle: LifecyclePolicy,
    pub cleanup: CleanupPolicy,
    pub jobs: JobsPolicy,
    pub agent: AgentPolicy,
    pub embedding: EmbeddingPolicy,
    pub export: ExportPolicy,
}

/// The policy format this build reads.
pub const POLICY_VERSION: u32 = 1;

/// A policy file's `version` key; [`POLICY_VERSION`] when absent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PolicyVersion(pub u32);

impl Default for PolicyVersion {
    fn default() -> Self {
        PolicyVersion(POLICY_VERSION)
    }
}

/// Who may export a user's data (`GET /v1/users/{user_id}/export`): the
/// user's own key and admin keys always; unbound agent keys only when allowed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExportPolicy {
    /// Agent keys (acting for every user of their tenant) may export any
    /// user of the tenant. Off by default: an export is all of a user's data.
    pub allow_agent_keys: bool,
}

/// Which embedding model embeds memories and queries, and what "similar"
/// means for each model: cosine similarities are not comparable between
/// models (all-MiniLM-L6-v2 puts unrelated texts near 0.0–0.15,
/// multilingual-e5-small near 0.7–0.8), so every threshold on a cosine is
/// stated per model, in `[embedding.<model>]`, and the configured model's
/// table is the one in force.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EmbeddingPolicy {
    /// A model name of [`crate::embed::assets::MODELS`]; overridden by
    /// `--embedding-model` / `MNEMO_EMBEDDING_MODEL`. Changing it needs a
    /// `mnemo reindex` (vectors of different models are not comparable).
    pub model: String,
    /// Query vectors kept in the embedder's LRU (keyed by model and text),
    /// for agents that repeat queries; 0 turns it off.
    pub query_cache_size: usize,
    #[serde(rename = "all-minilm-l6-v2")]
    pub all_minilm_l6_v2: ModelCalibration,
    #[serde(rename = "multilingual-e5-small")]
    pub multilingual_e5_small: ModelCalibration,
}

/// What a cosine means for one model: its level for unrelated texts and
/// the thresholds on it (each 0..1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelCalibration {
    /// The typical (median) cosine between a query and an unrelated text:
    /// the zero of the vector leg in `absolute` (unless the candidate floor
    /// is higher) and `calibrated` fusion.
    pub unrelated_cosine: f32,
    /// Vector candidates below this are dropped before fusion.
    pub min_vector_similarity: f32,
    /// "Same fact" (reinforcement) needs at least this.
    pub reinforce_min_similarity: f32,
    /// A correction supersedes a memory at least this similar.
    pub correction_min_similarity: f32,
    /// The cosine between a query and a memory that answers it in other
    /// words, near the top of the model's range (the 95th percentile of
    /// query–relevant cosines): the 1 of the vector leg in `absolute`
    /// fusion. Absent: the model's built-in value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paraphrase_cosine: Option<f32>,
    /// Cross-script alignment of the vector leg: how much lower this model
    /// puts a question and an unrelated memory of the other script than of
    /// the question's own (the difference of the unrelated medians). A
    /// candidate's cosine is raised by it times the memory's share of the
    /// other script, so that a Chinese answer to an English question is not
    /// outranked by English memories for being in another language. For a
    /// question in CJK and a memory in Latin script…
    #[serde(default)]
    pub cross_script_shift_cjk_query: f32,
    /// …and for a question in Latin script and a memory in CJK.
    #[serde(default)]
    pub cross_script_shift_latin_query: f32,
}

impl ModelCalibration {
    /// all-MiniLM-L6-v2 (measured: docs/decisions/0008-similarity-thresholds.md).
    pub const ALL_MINILM_L6_V2: ModelCalibration = ModelCalibration {
        unrelated_cosine: 0.1,
        min_vector_similarity: 0.15,
        reinforce_min_similarity: 0.85,
        correction_min_similarity: 0.5,
        paraphrase_cosine: Some(0.8),
        // English only: its CJK cosines are noise, and fusion gives its leg
        // no weight on CJK text (`known_token_share`).
        cross_script_shift_cjk_query: 0.0,
        cross_script_shift_latin_query: 0.0,
    };
    /// multilingual-e5-small (measured: docs/decisions/0008-similarity-thresholds.md).
    pub const MULTILINGUAL_E5_SMALL: ModelCalibration = ModelCalibration {
        unrelated_cosine: 0.78,
        min_vector_similarity: 0.79,
        reinforce_min_similarity: 0.92,
        correction_min_similarity: 0.86,
        paraphrase_cosine: Some(0.92),
        cross_script_shift_cjk_query: 0.089,
        cross_script_shift_latin_query: 0.055,
    };
}

impl Default for EmbeddingPolicy {
    fn default() -> Self {
        EmbeddingPolicy {
            model: crate::embed::assets::default_model().name.to_string(),
            query_cache_size: 1024,
            all_minilm_l6_v2: ModelCalibration::ALL_MINILM_L6_V2,
            multilingual_e5_small: ModelCalibration::MULTILINGUAL_E5_SMALL,
        }
    }
}

impl EmbeddingPolicy {
    /// The thresholds stated for `model` (a model name), if any.
    pub fn thresholds_for(&self, model: &str) -> Option<&ModelCalibration> {
        // Every graph of one model (int8, fp32, an older export) shares the
        // model's table: same weights, cosines within about 1% of each other.
        let family = crate::embed::assets::model_by_name(model).map_or(model, |spec| spec.dir);
        match family {
            "all-minilm-l6-v2" => Some(&self.all_minilm_l6_v2),
            "multilingual-e5-small" => Some(&self.multilingual_e5_small),
            _ => None,
        }
    }

    /// The configured model's paraphrase cosine (its table's, else the
    /// model's built-in value).
    pub fn paraphrase_cosine(&self) -> f32 {
        let t = self.thresholds();
        t.paraphrase_cosine.unwrap_or_else(|| {
            let family = crate::embed::assets::model_by_name(&self.model)
                .map_or(self.model.as_str(), |spec| spec.dir);
            match family {
                "multilingual-e5-small" => ModelCalibration::MULTILINGUAL_E5_SMALL,
                _ => ModelCalibration::ALL_MINILM_L6_V2,
            }
            .paraphrase_cosine
            .unwrap_or(1.0)
        })
    }

    /// The configured model's thresholds. A validated policy always has
    /// them; an unvalidated one with an unknown model gets the default
    /// model's.
    pub fn thresholds(&self) -> &ModelCalibration {
        self.thresholds_for(&self.model)
            .unwrap_or(&self.all_minilm_l6_v2)
    }

    /// The configured model's spec.
    pub fn model_spec(&self) -> Result<&'static crate::embed::assets::ModelSpec> {
        crate::embed::assets::model_by_name(&self.model).ok_or_else(|| Error::Config {
            key: "embedding.model".into(),
            message: format!(
                "unknown model `{}`; known models: {}",
                self.model,
                crate::embed::assets::MODELS
                    .iter()
                    .map(|m| m.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsPolicy {
    pub max_text_bytes: usize,
    pub max_batch: usize,
    /// Largest `metadata` of one memory, bytes of compact JSON.
    pub max_metadata_bytes: usize,
    /// Deepest nesting of `metadata` (the object itself is level 1).
    pub max_metadata_depth: usize,
    /// Sustained requests a second one API key may send (each node counts
    /// its own); 0 turns the limit off.
    pub requests_per_second_per_key: f64,
    /// Requests a key may send at once above the sustained rate.
    pub burst_per_key: u32,
    /// Threads one user may have; 0 = no quota.
    pub max_threads_per_user: u64,
    /// Memories one user may hold (any status, until purged); 0 = no quota.
    pub max_memories_per_user: u64,
    /// Calls to the chat model made for one user in any minute, per node
    /// (turns, the proxy, extraction, summaries); 0 = no quota.
    pub model_calls_per_user_per_minute: u32,
    /// Largest full payload of one tool result, bytes of compact JSON.
    pub max_tool_payload_bytes: usize,
}

impl Default for LimitsPolicy {
    fn default() -> Self {
        LimitsPolicy {
            max_text_bytes: 32 * 1024,
            max_batch: 1000,
            max_metadata_bytes: crate::domain::validate::MAX_METADATA_BYTES,
            max_metadata_depth: crate::domain::validate::MAX_METADATA_DEPTH,
            requests_per_second_per_key: 200.0,
            burst_per_key: 400,
            max_threads_per_user: 10_000,
            max_memories_per_user: 1_000_000,
            model_calls_per_user_per_minute: 120,
            max_tool_payload_bytes: 1 << 20,
        }
    }
}

/// The most `limits.max_tool_payload_bytes` may be (an import's cells are
/// bounded by the same).
pub const MAX_TOOL_PAYLOAD_BYTES: usize = 8 << 20;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetrievalPolicy {
    pub default_top_k: usize,
    pub max_top_k: usize,
    pub candidate_multiplier: usize,
    pub min_candidates: usize,
    pub min_score: f32,
    /// The lexical leg drops the query's stop words (English and Chinese)
    /// before searching; the index keeps every word.
    pub query_stop_words: bool,
    /// Both legs read "the user", "用户", "she"… in a question about the
    /// user as the user's own "I", "我" (`domain::perspective`).
    pub perspective: bool,
    pub fusion: FusionPolicy,
    pub rerank: RerankPolicy,
    pub conversation: ConversationPolicy,
    pub temporal: TemporalPolicy,
    pub learned: LearnedPolicy,
}

/// The learned stage (`domain::learned`): σ(bias + Σ weight · feature) over
/// every fused candidate. The defaults are the model `mnemo tune` fitted
/// over every set the project holds (docs/decisions/0023-learned-stage.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LearnedPolicy {
    pub enabled: bool,
    pub bias: f32,
    /// Weight per feature name (`domain::learned::FEATURES`); absent = 0.
    pub weights: std::collections::BTreeMap<String, f32>,
}

impl Default for LearnedPolicy {
    fn default() -> Self {
        let (bias, weights) = crate::domain::learned::SHIPPED;
        LearnedPolicy {
            enabled: true,
            bias,
            weights: weights.iter().map(|(n, w)| (n.to_string(), *w)).collect(),
        }
    }
}

impl LearnedPolicy {
    /// The model, `None` when the stage is off. Validated at load.
    pub fn model(&self) -> Option<crate::domain::learned::LinearModel> {
        self.enabled
            .then(|| crate::domain::learned::LinearModel::from_named(self.bias, &self.weights).ok())
            .flatten()
    }
}

/// Conversation context (`domain::turns`): the best hits lend a share of
/// their score to the turns beside them in their conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConversationPolicy {
    pub enabled: bool,
    /// Best hits whose neighbouring turns are brought in.
    pub depth: usize,
    /// The share of a hit's score lent to each turn beside it, 0..1.
    pub weight: f32,
}

impl Default for ConversationPolicy {
    fn default() -> Self {
        ConversationPolicy {
            enabled: true,
            depth: 10,
            weight: 0.5,
        }
    }
}

impl ConversationPolicy {
    /// The stage's parameters, `None` when it is off.
    pub fn params(&self) -> Option<crate::domain::turns::TurnContextParams> {
        self.enabled
            .then_some(crate::domain::turns::TurnContextParams {
                depth: self.depth,
                weight: self.weight,
            })
    }
}

/// A time named in the query (`domain::temporal`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TemporalPolicy {
    pub enabled: bool,
    /// Score × (1 + weight) for a memory created in the window the query
    /// names.
    pub weight: f32,
}

impl Default for TemporalPolicy {
    fn default() -> Self {
        TemporalPolicy {
            enabled: true,
            weight: 0.5,
        }
    }
}

impl TemporalPolicy {
    /// The signal's parameters, `None` when it is off.
    pub fn params(&self) -> Option<crate::domain::temporal::TemporalParams> {
        self.enabled
            .then_some(crate::domain::temporal::TemporalParams {
                weight: self.weight,
            })
    }
}

/// The second stage over the fused candidates (`domain::rerank`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RerankPolicy {
    pub enabled: bool,
    /// Best candidates the stage reorders (at least `top_k`).
    pub depth: usize,
    /// Score × (1 + phrase_weight · the share of the query's adjacent term
    /// pairs the memory holds adjacent).
    pub phrase_weight: f32,
    /// Score × (1 − duplicate_weight) for an older memory when a newer one
    /// of the same owner matches exactly the same query terms.
    pub duplicate_weight: f32,
}

impl Default for RerankPolicy {
    fn default() -> Self {
        RerankPolicy {
            enabled: false,
            depth: 30,
            phrase_weight: 0.2,
            duplicate_weight: 0.1,
        }
    }
}

impl RerankPolicy {
    /// The stage's parameters, `None` when it is off.
    pub fn params(&self) -> Option<crate::domain::rerank::RerankParams> {
        self.enabled.then_some(crate::domain::rerank::RerankParams {
            depth: self.depth,
            phrase_weight: self.phrase_weight,
            duplicate_weight: self.duplicate_weight,
        })
    }
}

impl Default for RetrievalPolicy {
    fn default() -> Self {
        RetrievalPolicy {
            default_top_k: 10,
            max_top_k: 100,
            candidate_multiplier: 4,
            min_candidates: 50,
            min_score: 0.0,
            query_stop_words: true,
            perspective: true,
            fusion: FusionPolicy::default(),
            rerank: RerankPolicy::default(),
            conversation: ConversationPolicy::default(),
            temporal: TemporalPolicy::default(),
            learned: LearnedPolicy::default(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FusionKind {
    Rrf,
    Weighted,
    Dbsf,
    MinMax,
    Calibrated,
    Absolute,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FusionPolicy {
    pub method: FusionKind,
    pub rrf_k: f32,
    pub lexical_weight: f32,
    pub vector_weight: f32,
    /// `absolute`: raise the vector leg's zero to the median cosine of the
    /// query's candidates when that is above the model's `unrelated_cosine`.
    pub candidate_floor: bool,
}

impl Default for FusionPolicy {
    fn default() -> Self {
        FusionPolicy {
            method: FusionKind::Absolute,
            rrf_k: 60.0,
            lexical_weight: 1.0,
            vector_weight: 1.0,
            candidate_floor: true,
        }
    }
}

impl FusionPolicy {
    /// The fusion method; `unrelated_cosine` and `paraphrase_cosine` are the
    /// model's (for `calibrated` and `absolute`).
    pub fn method(&self, unrelated_cosine: f32, paraphrase_cosine: f32) -> FusionMethod {
        match self.method {
            FusionKind::Rrf => FusionMethod::Rrf {
                k: self.rrf_k,
                lexical_weight: self.lexical_weight,
                vector_weight: self.vector_weight,
            },
            FusionKind::Weighted => FusionMethod::Weighted {
                lexical_weight: self.lexical_weight,
                vector_weight: self.vector_weight,
            },
            FusionKind::Dbsf => FusionMethod::Dbsf {
                lexical_weight: self.lexical_weight,
                vector_weight: self.vector_weight,
            },
            FusionKind::MinMax => FusionMethod::MinMax {
                lexical_weight: self.lexical_weight,
                vector_weight: self.vector_weight,
            },
            FusionKind::Calibrated => FusionMethod::Calibrated {
                lexical_weight: self.lexical_weight,
                vector_weight: self.vector_weight,
                unrelated_cosine,
            },
            FusionKind::Absolute => FusionMethod::Absolute {
                lexical_weight: self.lexical_weight,
                vector_weight: self.vector_weight,
                unrelated_cosine,
                paraphrase_cosine,
                candidate_floor: self.candidate_floor,
            },
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DecayPolicy {
    pub floor: f32,
    pub importance_weight: f32,
    pub half_life_days: HalfLives,
}

impl Default for DecayPolicy {
    fn default() -> Self {
        DecayPolicy {
            floor: 0.8,
            importance_weight: 0.2,
            half_life_days: HalfLives::default(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HalfLives {
    pub working: f64,
    pub long_term: f64,
    pub reference: f64,
    pub kinds: KindHalfLives,
}

impl Default for HalfLives {
    fn default() -> Self {
        HalfLives {
            working: 2.0,
            long_term: 180.0,
            reference: 0.0,
            kinds: KindHalfLives::default(),
        }
    }
}

/// Per-kind overrides of the long-term half-life; absent = the tier's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KindHalfLives {
    pub preference: Option<f64>,
    pub fact: Option<f64>,
    pub event: Option<f64>,
    pub instruction: Option<f64>,
    pub document: Option<f64>,
    pub message: Option<f64>,
    pub summary: Option<f64>,
}

impl Default for KindHalfLives {
    fn default() -> Self {
        KindHalfLives {
            preference: Some(365.0),
            fact: None,
            event: Some(30.0),
            instruction: Some(365.0),
            document: None,
            message: None,
            summary: None,
        }
    }
}

impl KindHalfLives {
    fn get(&self, kind: Kind) -> Option<f64> {
        match kind {
            Kind::Preference => self.preference,
            Kind::Fact => self.fact,
            Kind::Event => self.event,
            Kind::Instruction => self.instruction,
            Kind::Document => self.document,
            Kind::Message => self.message,
            Kind::Summary => self.summary,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DefaultsPolicy {
    pub importance: f32,
    pub confidence: f32,
}

impl Default for DefaultsPolicy {
    fn default() -> Self {
        DefaultsPolicy {
            importance: 0.5,
            confidence: 1.0,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IndexingPolicy {
    pub commit_delay_ms: u64,
    pub embed_batch: usize,
    pub optimize_after_writes: usize,
    pub optimize_interval_secs: u64,
    /// How often the repair loop checks the change feed against the indexes
    /// (`repair.rs`); a failed index write is healed within one to two.
    pub repair_interval_secs: u64,
    /// Embed a turn of a conversation (a memory with a user and a
    /// `thread_id`) with the end of the turn before it (`domain::turns`).
    pub embed_previous_turn: bool,
}

impl Default for IndexingPolicy {
    fn default() -> Self {
        IndexingPolicy {
            commit_delay_ms: 500,
            embed_batch: 32,
            optimize_after_writes: 5000,
            optimize_interval_secs: 60,
            repair_interval_secs: 1,
            embed_previous_turn: true,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReferencePolicy {
    pub chunk_chars: usize,
    pub chunk_overlap_chars: usize,
}

impl Default for ReferencePolicy {
    fn default() -> Self {
        ReferencePolicy {
            chunk_chars: 1200,
            chunk_overlap_chars: 150,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ContextPolicy {
    pub budget_fraction: f64,
    pub tokenizer: crate::domain::tokens::Tokenizer,
    pub max_long_term: usize,
    pub max_working: usize,
    pub max_reference: usize,
    /// Hits whose probability of relevance (the learned stage's score) is
    /// below this are left out of the block. 0..1; ignored without the stage.
    pub min_relevance: f32,
}

impl Default for ContextPolicy {
    fn default() -> Self {
        ContextPolicy {
            budget_fraction: 0.10,
            tokenizer: crate::domain::tokens::Tokenizer::Cl100kBase,
            max_long_term: 5,
            max_working: 3,
            max_reference: 5,
            min_relevance: 0.05,
        }
    }
}

/// The thin agent loop: prompt assembly, turns, compaction, extraction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentPolicy {
    /// The system message that opens every assembled prompt.
    pub instructions: String,
    /// Share of the window kept free for the model's reply. 0..1.
    pub reply_reserve_fraction: f64,
    /// Compact when the uncompacted history exceeds this share of the window.
    pub compact_above_fraction: f64,
    /// Compact a thread idle for this long.
    pub compact_idle_secs: u64,
    /// At most one compaction per thread per this period.
    pub compaction_cooldown_secs: u64,
    /// The newest messages compaction never touches (at least 3).
    pub keep_last_turns: usize,
    /// The window used for the compaction trigger when no model is
    /// configured and the caller gave none.
    pub default_context_tokens: usize,
    /// How long a turn holds the thread's lock at most (a crashed turn's
    /// lock expires after this).
    pub turn_lease_secs: u64,
    /// How long an extraction run holds its claim on messages at most.
    pub extraction_lease_secs: u64,
    /// How often the idle compaction checks threads.
    pub compaction_interval_secs: u64,
}

impl Default for AgentPolicy {
    fn default() -> Self {
        AgentPolicy {
            instructions:
                "You are a helpful assistant. Use the background memories only when they \
                           are relevant to the user's request."
                    .into(),
            reply_reserve_fraction: 0.25,
            compact_above_fraction: 0.7,
            compact_idle_secs: 300,
            compaction_cooldown_secs: 600,
            keep_last_turns: 3,
            default_context_tokens: 8192,
            turn_lease_secs: 300,
            extraction_lease_secs: 300,
            compaction_interval_secs: 60,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LifecyclePolicy {
    pub pending_below_confidence: f32,
    pub pending_ttl_days: u32,
    pub working_ttl_days: u32,
    pub expired_grace_days: u32,
    pub archived_grace_days: u32,
    pub deleted_retention_days: u32,
    pub sweep_interval_secs: u64,
    pub reinforce_duplicates: bool,
    pub reinforce_min_overlap: f32,
    pub reinforce_importance_step: f32,
    pub detect_corrections: bool,
    pub correction_min_overlap: f32,
}

impl Default for LifecyclePolicy {
    fn default() -> Self {
        LifecyclePolicy {
            pending_below_confidence: 0.6,
            pending_ttl_days: 30,
            working_ttl_days: 30,
            expired_grace_days: 7,
            archived_grace_days: 30,
            deleted_retention_days: 30,
            sweep_interval_secs: 3600,
            reinforce_duplicates: true,
            reinforce_min_overlap: 0.6,
            reinforce_importance_step: 0.05,
            detect_corrections: true,
            correction_min_overlap: 0.25,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CleanupPolicy {
    pub interval_days: u32,
    pub min_importance: f32,
    pub unaccessed_days: u32,
    pub heat_half_life_days: f64,
    pub heat_weight: f64,
    pub age_weight: f64,
    pub age_half_life_days: f64,
}

impl Default for CleanupPolicy {
    fn default() -> Self {
        CleanupPolicy {
            interval_days: 7,
            min_importance: 0.1,
            unaccessed_days: 90,
            heat_half_life_days: 30.0,
            heat_weight: 0.3,
            age_weight: 0.35,
            age_half_life_days: 180.0,
        }
    }
}

impl CleanupPolicy {
    pub fn importance_rule(&self) -> crate::domain::lifecycle::ImportanceRule {
        crate::domain::lifecycle::ImportanceRule {
            heat_half_life_days: self.heat_half_life_days,
            heat_weight: self.heat_weight,
            age_weight: self.age_weight,
            age_half_life_days: self.age_half_life_days,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct JobsPolicy {
    pub batch_size: usize,
    pub lease_secs: u64,
}

impl Default for JobsPolicy {
    fn default() -> Self {
        JobsPolicy {
            batch_size: 1000,
            lease_secs: 600,
        }
    }
}

fn unit(key: &str, v: f64) -> Result<()> {
    if !(0.0..=1.0).contains(&v) || v.is_nan() {
        return Err(Error::Config {
            key: key.to_string(),
            message: format!("must be between 0 and 1, got {v}"),
        });
    }
    Ok(())
}

fn positive(key: &str, v: f64) -> Result<()> {
    if v <= 0.0 || v.is_nan() {
        return Err(Error::Config {
            key: key.to_string(),
            message: format!("must be greater than 0, got {v}"),
        });
    }
    Ok(())
}

fn non_negative(key: &str, v: f64) -> Result<()> {
    if v < 0.0 || v.is_nan() {
        return Err(Error::Config {
            key: key.to_string(),
            message: format!("must not be negative, got {v}"),
        });
    }
    Ok(())
}

/// Keys that moved from `[retrieval]` / `[lifecycle]` to `[embedding.<model>]`.
const MOVED_TO_EMBEDDING: [&str; 3] = [
    "min_vector_similarity",
    "reinforce_min_similarity",
    "correction_min_similarity",
];

impl Policy {
    /// Parses and validates a policy file's text.
    pub fn from_toml(text: &str) -> Result<Self> {
        let policy: Policy = toml::from_str(text).map_err(|e| {
            let key = match e.span() {
                Some(span) => {
                    let before = &text[..span.start.min(text.len())];
                    let line = before.matches('\n').count() + 1;
                    let section = before
                        .lines()
                        .rev()
                        .find_map(|l| l.trim().strip_prefix('[')?.strip_suffix(']'))
                        .unwrap_or("(top level)");
                    format!("[{section}] at line {line}")
                }
                None => "memory_policies.toml".into(),
            };
            let mut message = e.message().to_string();
            if MOVED_TO_EMBEDDING
                .iter()
                .any(|k| message.contains(&format!("`{k}`")))
            {
                message.push_str(
                    " (similarity thresholds are stated per model since they mean different \
                     things per model: move it to [embedding.<model>], e.g. \
                     [embedding.all-minilm-l6-v2])",
                );
            }
            Error::Config { key, message }
        })?;
        policy.validate()?;
        Ok(policy)
    }

    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Config {
            key: path.display().to_string(),
            message: format!("cannot read policy file: {e}"),
        })?;
        Self::from_toml(&text)
    }

    /// Checks every range; the error names the key.
    pub fn validate(&self) -> Result<()> {
        if self.version.0 != POLICY_VERSION {
            return Err(Error::Config {
                key: "version".into(),
                message: format!(
                    "unknown policy file version {}; this Mnemo reads version {POLICY_VERSION}",
                    self.version.0
                ),
            });
        }
        let l = &self.limits;
        positive("limits.max_text_bytes", l.max_text_bytes as f64)?;
        positive("limits.max_batch", l.max_batch as f64)?;
        if !(2..=crate::domain::validate::MAX_METADATA_BYTES).contains(&l.max_metadata_bytes) {
            return Err(Error::Config {
                key: "limits.max_metadata_bytes".into(),
                message: format!(
                    "must be between 2 and {}, got {}",
                    crate::domain::validate::MAX_METADATA_BYTES,
                    l.max_metadata_bytes
                ),
            });
        }
        non_negative(
            "limits.requests_per_second_per_key",
            l.requests_per_second_per_key,
        )?;
        positive("limits.burst_per_key", l.burst_per_key as f64)?;
        if !(1..=MAX_TOOL_PAYLOAD_BYTES).contains(&l.max_tool_payload_bytes) {
            return Err(Error::Config {
                key: "limits.max_tool_payload_bytes".into(),
                message: format!(
                    "must be between 1 and {MAX_TOOL_PAYLOAD_BYTES}, got {}",
                    l.max_tool_payload_bytes
                ),
            });
        }
        if !(1..=64).contains(&l.max_metadata_depth) {
            return Err(Error::Config {
                key: "limits.max_metadata_depth".into(),
                message: format!("must be between 1 and 64, got {}", l.max_metadata_depth),
            });
        }
        let r = &self.retrieval;
        positive("retrieval.default_top_k", r.default_top_k as f64)?;
        positive("retrieval.max_top_k", r.max_top_k as f64)?;
        if r.default_top_k > r.max_top_k {
            return Err(Error::Config {
                key: "retrieval.default_top_k".into(),
                message: "must not exceed retrieval.max_top_k".into(),
            });
        }
        positive(
            "retrieval.candidate_multiplier",
            r.candidate_multiplier as f64,
        )?;
        unit("retrieval.min_score", r.min_score as f64)?;
        positive("retrieval.fusion.rrf_k", r.fusion.rrf_k as f64)?;
        non_negative(
            "retrieval.fusion.lexical_weight",
            r.fusion.lexical_weight as f64,
        )?;
        non_negative(
            "retrieval.fusion.vector_weight",
            r.fusion.vector_weight as f64,
        )?;
        positive("retrieval.rerank.depth", r.rerank.depth as f64)?;
        if !(r.rerank.phrase_weight >= 0.0 && r.rerank.phrase_weight.is_finite()) {
            return Err(Error::Config {
                key: "retrieval.rerank.phrase_weight".into(),
                message: "must be a finite number >= 0".into(),
            });
        }
        unit(
            "retrieval.rerank.duplicate_weight",
            r.rerank.duplicate_weight as f64,
        )?;
        positive("retrieval.conversation.depth", r.conversation.depth as f64)?;
        if let Err(message) =
            crate::domain::learned::LinearModel::from_named(r.learned.bias, &r.learned.weights)
        {
            return Err(Error::Config {
                key: "retrieval.learned".into(),
                message,
            });
        }
        unit("context.min_relevance", self.context.min_relevance as f64)?;
        if !(r.temporal.weight >= 0.0 && r.temporal.weight <= 10.0) {
            return Err(Error::Config {
                key: "retrieval.temporal.weight".into(),
                message: "must be a number from 0 to 10".into(),
            });
        }
        unit(
            "retrieval.conversation.weight",
            r.conversation.weight as f64,
        )?;
        if r.fusion.lexical_weight + r.fusion.vector_weight <= 0.0 {
            return Err(Error::Config {
                key: "retrieval.fusion".into(),
                message: "at least one leg needs a positive weight".into(),
            });
        }
        let d = &self.decay;
        unit("decay.floor", d.floor as f64)?;
        unit("decay.importance_weight", d.importance_weight as f64)?;
        let h = &d.half_life_days;
        non_negative("decay.half_life_days.working", h.working)?;
        non_negative("decay.half_life_days.long_term", h.long_term)?;
        non_negative("decay.half_life_days.reference", h.reference)?;
        for kind in Kind::ALL {
            if let Some(v) = h.kinds.get(kind) {
                non_negative(&format!("decay.half_life_days.kinds.{kind}"), v)?;
            }
        }
        unit("defaults.importance", self.defaults.importance as f64)?;
        unit("defaults.confidence", self.defaults.confidence as f64)?;
        let i = &self.indexing;
        if i.commit_delay_ms > 60_000 {
            return Err(Error::Config {
                key: "indexing.commit_delay_ms".into(),
                message: format!("must be at most 60000, got {}", i.commit_delay_ms),
            });
        }
        positive("indexing.embed_batch", i.embed_batch as f64)?;
        if !(1..=3600).contains(&i.repair_interval_secs) {
            return Err(Error::Config {
                key: "indexing.repair_interval_secs".into(),
                message: format!("must be 1..=3600, got {}", i.repair_interval_secs),
            });
        }
        let re = &self.reference;
        positive("reference.chunk_chars", re.chunk_chars as f64)?;
        if re.chunk_overlap_chars >= re.chunk_chars {
            return Err(Error::Config {
                key: "reference.chunk_overlap_chars".into(),
                message: "must be smaller than reference.chunk_chars".into(),
            });
        }
        let c = &self.context;
        unit("context.budget_fraction", c.budget_fraction)?;
        positive("context.budget_fraction", c.budget_fraction)?;
        let lc = &self.lifecycle;
        unit(
            "lifecycle.pending_below_confidence",
            lc.pending_below_confidence as f64,
        )?;
        positive(
            "lifecycle.sweep_interval_secs",
            lc.sweep_interval_secs as f64,
        )?;
        unit(
            "lifecycle.reinforce_min_overlap",
            lc.reinforce_min_overlap as f64,
        )?;
        unit(
            "lifecycle.reinforce_importance_step",
            lc.reinforce_importance_step as f64,
        )?;
        unit(
            "lifecycle.correction_min_overlap",
            lc.correction_min_overlap as f64,
        )?;
        positive("lifecycle.pending_ttl_days", lc.pending_ttl_days as f64)?;
        let cl = &self.cleanup;
        positive("cleanup.interval_days", cl.interval_days as f64)?;
        unit("cleanup.min_importance", cl.min_importance as f64)?;
        positive("cleanup.heat_half_life_days", cl.heat_half_life_days)?;
        unit("cleanup.heat_weight", cl.heat_weight)?;
        unit("cleanup.age_weight", cl.age_weight)?;
        positive("cleanup.age_half_life_days", cl.age_half_life_days)?;
        let a = &self.agent;
        unit("agent.reply_reserve_fraction", a.reply_reserve_fraction)?;
        unit("agent.compact_above_fraction", a.compact_above_fraction)?;
        positive("agent.compact_above_fraction", a.compact_above_fraction)?;
        if a.keep_last_turns < crate::domain::chat::ALWAYS_KEPT_TURNS {
            return Err(Error::Config {
                key: "agent.keep_last_turns".into(),
                message: format!(
                    "must be at least {}: the last turns are always in the prompt whole",
                    crate::domain::chat::ALWAYS_KEPT_TURNS
                ),
            });
        }
        if a.default_context_tokens < 256 {
            return Err(Error::Config {
                key: "agent.default_context_tokens".into(),
                message: "must be at least 256".into(),
            });
        }
        positive("agent.turn_lease_secs", a.turn_lease_secs as f64)?;
        positive(
            "agent.extraction_lease_secs",
            a.extraction_lease_secs as f64,
        )?;
        positive(
            "agent.compaction_interval_secs",
            a.compaction_interval_secs as f64,
        )?;
        positive("jobs.batch_size", self.jobs.batch_size as f64)?;
        positive("jobs.lease_secs", self.jobs.lease_secs as f64)?;
        let e = &self.embedding;
        e.model_spec()?;
        for spec in crate::embed::assets::MODELS {
            let Some(t) = e.thresholds_for(spec.name) else {
                return Err(Error::Config {
                    key: format!("embedding.{}", spec.name),
                    message: "no similarity thresholds are stated for this model".into(),
                });
            };
            for (field, v) in [
                ("unrelated_cosine", t.unrelated_cosine),
                ("min_vector_similarity", t.min_vector_similarity),
                ("reinforce_min_similarity", t.reinforce_min_similarity),
                ("correction_min_similarity", t.correction_min_similarity),
                (
                    "cross_script_shift_cjk_query",
                    t.cross_script_shift_cjk_query,
                ),
                (
                    "cross_script_shift_latin_query",
                    t.cross_script_shift_latin_query,
                ),
            ] {
                unit(&format!("embedding.{}.{field}", spec.name), v as f64)?;
            }
            if let Some(p) = t.paraphrase_cosine {
                let key = format!("embedding.{}.paraphrase_cosine", spec.name);
                unit(&key, p as f64)?;
                if p <= t.unrelated_cosine {
                    return Err(Error::Config {
                        key,
                        message: "must be above unrelated_cosine".into(),
                    });
                }
            }
        }
        Ok(())
    }

    pub fn limits(&self) -> Limits {
        Limits {
            max_text_bytes: self.limits.max_text_bytes,
            max_metadata_bytes: self.limits.max_metadata_bytes,
            max_metadata_depth: self.limits.max_metadata_depth,
        }
    }

    pub fn ranking(&self) -> RankingParams {
        RankingParams {
            fusion: self.retrieval.fusion.method(
                self.embedding.thresholds().unrelated_cosine,
                self.embedding.paraphrase_cosine(),
            ),
            query_stop_words: self.retrieval.query_stop_words,
            perspective: self.retrieval.perspective,
            learned: self.retrieval.learned.model().map(|model| {
                crate::domain::learned::LearnedParams {
                    model,
                    unrelated_cosine: self.embedding.thresholds().unrelated_cosine,
                    paraphrase_cosine: self.embedding.paraphrase_cosine(),
                }
            }),
            decay_floor: self.decay.floor,
            importance_weight: self.decay.importance_weight,
            min_score: self.retrieval.min_score,
            rerank: self.retrieval.rerank.params(),
            context: self.retrieval.conversation.params(),
            temporal: self.retrieval.temporal.params(),
        }
    }

    /// Vector candidates below this cosine are dropped before fusion (the
    /// configured model's `[embedding.<model>] min_vector_similarity`).
    pub fn min_vector_similarity(&self) -> f32 {
        self.embedding.thresholds().min_vector_similarity
    }

    /// "Same fact": the configured model's similarity threshold and the
    /// lifecycle's word overlap.
    pub fn match_rule(&self) -> crate::domain::lifecycle::MatchRule {
        crate::domain::lifecycle::MatchRule {
            min_similarity: self.embedding.thresholds().reinforce_min_similarity,
            min_overlap: self.lifecycle.reinforce_min_overlap,
        }
    }

    /// "Corrects": the configured model's similarity threshold and the
    /// lifecycle's word overlap.
    pub fn correction_rule(&self) -> crate::domain::lifecycle::CorrectionRule {
        crate::domain::lifecycle::CorrectionRule {
            min_similarity: self.embedding.thresholds().correction_min_similarity,
            min_overlap: self.lifecycle.correction_min_overlap,
        }
    }

    /// The decay half-life of a memory in days; `None` = no decay.
    pub fn half_life_days(&self, memory: &Memory) -> Option<f64> {
        let h = &self.decay.half_life_days;
        let days = match memory.tier {
            Tier::Working => h.working,
            Tier::Reference => h.reference,
            Tier::LongTerm => h.kinds.get(memory.kind).unwrap_or(h.long_term),
        };
        (days > 0.0).then_some(days)
    }

    /// How many candidates each leg fetches for a given top_k.
    pub fn candidates(&self, top_k: usize) -> usize {
        (top_k * self.retrieval.candidate_multiplier).max(self.retrieval.min_candidates)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_key_is_optional_and_checked() {
        let absent = Policy::from_toml("[limits]\nmax_batch = 10\n").unwrap();
        assert_eq!(absent.version, PolicyVersion(1));
        let one = Policy::from_toml("version = 1\n[limits]\nmax_batch = 10\n").unwrap();
        assert_eq!(one, absent);
        match Policy::from_toml("version = 2\n") {
            Err(Error::Config { key, message }) => {
                assert_eq!(key, "version");
                assert!(message.contains("version 2"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_shipped_file_parses_and_equals_the_defaults() {
        let text = include_str!("../memory_policies.toml");
        let policy = Policy::from_toml(text).expect("shipped policy is valid");
        assert_eq!(policy, Policy::default());
    }

    #[test]
    fn an_unknown_embedding_model_is_an_error_naming_the_key() {
        let err = Policy::from_toml("[embedding]\nmodel = \"bert-xxl\"\n").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("embedding.model"), "{msg}");
        assert!(msg.contains("multilingual-e5-small"), "{msg}");
        let ok = Policy::from_toml("[embedding]\nmodel = \"multilingual-e5-small\"\n").unwrap();
        assert_eq!(ok.embedding.model_spec().unwrap().dim, 384);
    }

    #[test]
    fn thresholds_follow_the_configured_model() {
        let mut mini = Policy::default();
        assert_eq!(mini.embedding.model, "multilingual-e5-small");
        mini.embedding.model = "all-minilm-l6-v2".into();
        mini.validate().unwrap();
        assert_eq!(
            mini.min_vector_similarity(),
            ModelCalibration::ALL_MINILM_L6_V2.min_vector_similarity
        );
        let mut e5 = Policy::default();
        e5.embedding.model = "multilingual-e5-small".into();
        e5.validate().unwrap();
        let t = &ModelCalibration::MULTILINGUAL_E5_SMALL;
        assert_eq!(e5.min_vector_similarity(), t.min_vector_similarity);
        assert_eq!(e5.match_rule().min_similarity, t.reinforce_min_similarity);
        assert_eq!(
            e5.correction_rule().min_similarity,
            t.correction_min_similarity
        );
        assert_ne!(e5.match_rule(), mini.match_rule());
        // The overlap half of each rule is the lifecycle's, whatever the model.
        assert_eq!(e5.match_rule().min_overlap, mini.match_rule().min_overlap);
        // Every known model has a table.
        for spec in crate::embed::assets::MODELS {
            assert!(
                mini.embedding.thresholds_for(spec.name).is_some(),
                "{}",
                spec.name
            );
        }
        let p = Policy::from_toml(
            "[embedding]\nmodel = \"multilingual-e5-small\"\n\
             [embedding.multilingual-e5-small]\nunrelated_cosine = 0.7\nmin_vector_similarity = 0.81\n\
             reinforce_min_similarity = 0.95\ncorrection_min_similarity = 0.88\n",
        )
        .unwrap();
        assert_eq!(p.min_vector_similarity(), 0.81);
        let mut p = p;
        p.retrieval.fusion.method = FusionKind::Calibrated;
        assert_eq!(
            p.ranking().fusion,
            FusionMethod::Calibrated {
                lexical_weight: 1.0,
                vector_weight: 1.0,
                unrelated_cosine: 0.7
            }
        );
        // A table without `paraphrase_cosine` keeps the model's built-in one.
        p.retrieval.fusion.method = FusionKind::Absolute;
        assert_eq!(
            p.ranking().fusion,
            FusionMethod::Absolute {
                lexical_weight: 1.0,
                vector_weight: 1.0,
                unrelated_cosine: 0.7,
                paraphrase_cosine: 0.92,
                candidate_floor: true,
            }
        );
        let err = Policy::from_toml(
            "[embedding.multilingual-e5-small]\nunrelated_cosine = 0.7\nmin_vector_similarity = 0.8\n\
             reinforce_min_similarity = 0.95\ncorrection_min_similarity = 0.88\nparaphrase_cosine = 0.6\n",
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("embedding.multilingual-e5-small.paraphrase_cosine"),
            "{err}"
        );
        let err = Policy::from_toml(
            "[embedding.multilingual-e5-small]\nunrelated_cosine = 0.7\nmin_vector_similarity = 1.5\n\
             reinforce_min_similarity = 0.95\ncorrection_min_similarity = 0.88\n",
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("embedding.multilingual-e5-small.min_vector_similarity"),
            "{err}"
        );
    }

    #[test]
    fn a_threshold_in_its_old_place_says_where_it_went() {
        let err = Policy::from_toml("[retrieval]\nmin_vector_similarity = 0.2\n").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("[embedding.<model>]"), "{msg}");
        let err = Policy::from_toml("[lifecycle]\nreinforce_min_similarity = 0.9\n").unwrap_err();
        assert!(err.to_string().contains("per model"), "{err}");
    }

    #[test]
    fn unknown_keys_are_errors_that_name_the_key() {
        let err = Policy::from_toml("[retrieval]\ndefault_topk = 3\n").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("default_topk"), "{msg}");
        assert!(msg.contains("[retrieval] at line 2"), "{msg}");
    }

    #[test]
    fn out_of_range_values_name_the_key() {
        let err = Policy::from_toml("[context]\nbudget_fraction = 1.5\n").unwrap_err();
        assert!(err.to_string().contains("context.budget_fraction"), "{err}");
        let err = Policy::from_toml("[decay.half_life_days.kinds]\nevent = -1.0\n").unwrap_err();
        assert!(
            err.to_string().contains("decay.half_life_days.kinds.event"),
            "{err}"
        );
        let err = Policy::from_toml("[retrieval.fusion]\nmethod = \"max\"\n").unwrap_err();
        assert!(err.to_string().contains("max"), "{err}");
        for method in [
            "dbsf",
            "min_max",
            "rrf",
            "weighted",
            "calibrated",
            "absolute",
        ] {
            let p =
                Policy::from_toml(&format!("[retrieval.fusion]\nmethod = \"{method}\"\n")).unwrap();
            assert_eq!(p.ranking().fusion.name(), method);
        }
    }
}
