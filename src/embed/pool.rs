//! Sessions of a model and how bulk embedding spreads over them.
//!
//! # Sessions
//! A [`Pool`] holds *bulk* sessions, which `embed_passages` uses, and
//! *reserved* query sessions, which only queries use. A query takes a free
//! reserved session, else any free bulk session, else waits for its reserved
//! session; bulk work never touches the reserved ones, so a search never
//! waits behind a batch of a bulk ingest (it shares the CPU with it instead,
//! and a query is short). With no reserved session, queries take any session
//! like bulk work does.
//!
//! # Bulk embedding
//! [`embed_bulk`] sorts the texts by length (bytes: about one token per 3–5
//! bytes for Latin and CJK text alike, and free to compute, unlike a second
//! tokenisation), cuts the sorted list into batches, so that each batch pads
//! to a length close to its own texts', embeds the batches on up to
//! `workers` scoped threads at once (each takes the next batch and a session),
//! and puts the vectors back in the caller's order. Blocking; call it off the
//! async runtime.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use parking_lot::{Mutex, MutexGuard};

use crate::error::Result;

/// Bulk sessions and reserved query sessions of one model.
pub(crate) struct Pool<S> {
    bulk: Vec<Mutex<S>>,
    query: Vec<Mutex<S>>,
    next: AtomicUsize,
}

impl<S> Pool<S> {
    /// `bulk` must not be empty.
    pub(crate) fn new(bulk: Vec<S>, query: Vec<S>) -> Self {
        assert!(!bulk.is_empty(), "a pool needs a bulk session");
        Pool {
            bulk: bulk.into_iter().map(Mutex::new).collect(),
            query: query.into_iter().map(Mutex::new).collect(),
            next: AtomicUsize::new(0),
        }
    }

    /// Bulk sessions: how many batches can run at once.
    pub(crate) fn bulk_len(&self) -> usize {
        self.bulk.len()
    }

    pub(crate) fn reserved_len(&self) -> usize {
        self.query.len()
    }

    fn turn(&self) -> usize {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// A free session of `list`, starting at `start`.
    fn free(list: &[Mutex<S>], start: usize) -> Option<MutexGuard<'_, S>> {
        let n = list.len();
        (0..n).find_map(|i| list[(start + i) % n].try_lock())
    }

    /// A bulk session: a free one, or the next one in turn when all are busy.
    pub(crate) fn bulk(&self) -> MutexGuard<'_, S> {
        let start = self.turn();
        Self::free(&self.bulk, start).unwrap_or_else(|| self.bulk[start % self.bulk.len()].lock())
    }

    /// A session for a query: a free reserved one, a free bulk one, or (all
    /// busy) a reserved one when there is one, so bulk work cannot hold it.
    pub(crate) fn query(&self) -> MutexGuard<'_, S> {
        let start = self.turn();
        if let Some(g) = Self::free(&self.query, start) {
            return g;
        }
        if let Some(g) = Self::free(&self.bulk, start) {
            return g;
        }
        match self.query.len() {
            0 => self.bulk[start % self.bulk.len()].lock(),
            n => self.query[start % n].lock(),
        }
    }
}

/// The caller's indices cut into batches of at most `batch`, shortest texts
/// first.
pub(crate) fn length_sorted_batches(texts: &[&str], batch: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| texts[i].len());
    order.chunks(batch.max(1)).map(<[usize]>::to_vec).collect()
}

/// Embeds `texts` in length-sorted batches on up to `workers` threads;
/// `run` embeds one batch (in the batch's order). Returns one output per
/// text in the caller's order. The first error stops the remaining batches.
pub(crate) fn embed_bulk<T, F>(
    texts: &[&str],
    batch: usize,
    workers: usize,
    run: F,
) -> Result<Vec<T>>
where
    T: Send,
    F: Fn(&[&str]) -> Result<Vec<T>> + Sync,
{
    if texts.is_empty() {
        return Ok(Vec::new());
    }
    let batches = length_sorted_batches(texts, batch);
    let run_one = |b: &[usize]| -> Result<Vec<T>> {
        let chunk: Vec<&str> = b.iter().map(|&i| texts[i]).collect();
        let out = run(&chunk)?;
        if out.len() != chunk.len() {
            return Err(super::error::bad_output(format!(
                "model returned {} vectors for {} texts",
                out.len(),
                chunk.len()
            )));
        }
        Ok(out)
    };
    let workers = workers.clamp(1, batches.len());
    let results: Vec<Mutex<Option<Result<Vec<T>>>>> =
        batches.iter().map(|_| Mutex::new(None)).collect();
    if workers == 1 {
        for (b, slot) in batches.iter().zip(&results) {
            let r = run_one(b);
            let failed = r.is_err();
            *slot.lock() = Some(r);
            if failed {
                break;
            }
        }
    } else {
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= batches.len() || failed.load(Ordering::Relaxed) {
                        break;
                    }
                    let r = run_one(&batches[i]);
                    if r.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    *results[i].lock() = Some(r);
                });
            }
        });
    }
    let mut out: Vec<Option<T>> = (0..texts.len()).map(|_| None).collect();
    for (b, slot) in batches.iter().zip(results) {
        match slot.into_inner() {
            Some(Ok(vs)) => {
                for (&i, v) in b.iter().zip(vs) {
                    out[i] = Some(v);
                }
            }
            Some(Err(e)) => return Err(e),
            // Skipped after another batch failed; that error is returned.
            None => {}
        }
    }
    out.into_iter()
        .map(|v| v.ok_or_else(|| super::error::bad_output("a batch was not embedded".into())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_sorted_by_length_and_cover_every_text_once() {
        let texts = ["ccc", "a", "bbbbb", "dd", "", "eeee"];
        let b = length_sorted_batches(&texts, 4);
        assert_eq!(b, vec![vec![4, 1, 3, 0], vec![5, 2]]);
        assert_eq!(length_sorted_batches(&texts, 0).len(), 6, "batch 0 means 1");
    }

    #[test]
    fn bulk_output_is_in_the_callers_order_on_any_number_of_workers() {
        let texts: Vec<String> = (0..103).map(|i| "x".repeat((i * 37) % 50)).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        for workers in [1, 2, 3, 8] {
            let calls = AtomicUsize::new(0);
            let out = embed_bulk(&refs, 8, workers, |chunk| {
                calls.fetch_add(1, Ordering::Relaxed);
                // Within a batch, texts arrive shortest first.
                assert!(chunk.windows(2).all(|w| w[0].len() <= w[1].len()));
                Ok(chunk.iter().map(|t| t.len()).collect())
            })
            .unwrap();
            let want: Vec<usize> = refs.iter().map(|t| t.len()).collect();
            assert_eq!(out, want, "{workers} workers");
            assert_eq!(calls.load(Ordering::Relaxed), 13);
        }
        assert!(embed_bulk(&[], 8, 2, |_| Ok(vec![0u8])).unwrap().is_empty());
    }

    #[test]
    fn bulk_runs_batches_in_parallel() {
        let texts: Vec<String> = (0..8).map(|i| i.to_string()).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let running = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        embed_bulk(&refs, 1, 2, |chunk| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(20));
            running.fetch_sub(1, Ordering::SeqCst);
            Ok(vec![(); chunk.len()])
        })
        .unwrap();
        assert_eq!(peak.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_failing_batch_fails_the_call_and_a_short_answer_is_an_error() {
        let refs = ["a", "bb", "ccc", "dddd"];
        let err = embed_bulk(&refs, 1, 2, |chunk| {
            if chunk[0] == "ccc" {
                Err(crate::embed::error::bad_output("boom".into()))
            } else {
                Ok(vec![1; chunk.len()])
            }
        });
        assert!(
            matches!(&err, Err(e @ crate::Error::Embedder(_)) if e.to_string().ends_with("boom"))
        );
        let short = embed_bulk(&refs, 2, 1, |_| Ok(vec![1]));
        assert!(
            matches!(&short, Err(e @ crate::Error::Embedder(_)) if e.to_string().contains("1 vectors for 2"))
        );
    }

    #[test]
    fn queries_use_the_reserved_session_while_bulk_holds_every_other() {
        let pool = Pool::new(vec![0, 1], vec![9]);
        let b0 = pool.bulk();
        let b1 = pool.bulk();
        assert_eq!({ *b0 } + { *b1 }, 1, "two different bulk sessions");
        assert_eq!(*pool.query(), 9);
        // Bulk never takes the reserved session: with both bulk sessions
        // held, a third bulk caller would wait (checked without blocking).
        assert!(Pool::free(&pool.bulk, 0).is_none());
        drop(b1);
        // A free reserved session is preferred to a free bulk one.
        assert_eq!(*pool.query(), 9);
        let q = pool.query();
        assert_eq!(*q, 9);
        // Reserved one busy: a second query takes a free bulk session.
        assert_ne!(*pool.query(), 9);
        drop((b0, q));
        // Without reserved sessions queries share the bulk ones.
        let shared = Pool::new(vec![5], vec![]);
        assert_eq!(*shared.query(), 5);
        assert_eq!((shared.bulk_len(), shared.reserved_len()), (1, 0));
    }
}
