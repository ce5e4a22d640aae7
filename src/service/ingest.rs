//! Bulk ingest as a two-stage pipeline: embedding the next batch overlaps
//! with writing the current one (store transaction, lifecycle checks,
//! tantivy and vector index upserts).
//!
//! [`pipeline`] joins a producer and a consumer on one task through a
//! bounded channel of [`DEPTH`] batches, so the producer is never more than
//! `DEPTH + 1` batches ahead (memory stays bounded) and the first error on
//! either side ends both. The real work of each side runs off the runtime
//! (`spawn_blocking`), so the two stages use different cores.
//!
//! [`add_bulk`] is what `mnemo ingest` and `mnemo eval` use: its producer
//! embeds each batch through the engine's embedding cache, its consumer
//! calls [`Engine::add`] on the batch, which finds the vectors in the cache.
//! The write path and its rules (validation, lifecycle, one transaction per
//! batch, batches in order) are exactly [`Engine::add`]'s; only the embedding
//! moved ahead. `reindex` uses [`pipeline`] the same way.

use std::future::Future;

use tokio::sync::mpsc;

use crate::domain::Actor;
use crate::domain::{Memory, NewMemory};
use crate::error::Result;
use crate::service::Engine;

/// Batches waiting between the two stages.
pub const DEPTH: usize = 2;

/// Runs `produce` and `consume` concurrently, joined by a channel of
/// [`DEPTH`] items; returns what `consume` returns. When the consumer fails
/// or returns, the producer's next `send` fails: it should stop then.
pub async fn pipeline<T, P, PF, C, CF, R>(produce: P, consume: C) -> Result<R>
where
    P: FnOnce(mpsc::Sender<T>) -> PF,
    PF: Future<Output = Result<()>>,
    C: FnOnce(mpsc::Receiver<T>) -> CF,
    CF: Future<Output = Result<R>>,
{
    let (tx, rx) = mpsc::channel(DEPTH);
    let (_, out) = tokio::try_join!(produce(tx), consume(rx))?;
    Ok(out)
}

/// Adds `items` in batches of `batch` (in order, one [`Engine::add`] per
/// batch), embedding batch *n + 1* while batch *n* is written; `progress`
/// gets the number of items written after each batch. Returns how many
/// were added. Stops at the first failing batch (earlier batches stay
/// written, as with consecutive `add` calls).
/// `items` is consumed a batch at a time, so a streaming iterator (`mnemo
/// ingest` reads its file as it goes) keeps memory bounded by the batches
/// in flight, not by the corpus.
pub async fn add_bulk(
    engine: &Engine,
    actor: &Actor,
    items: impl IntoIterator<Item = NewMemory, IntoIter: Send>,
    batch: usize,
    mut progress: impl FnMut(usize),
) -> Result<usize> {
    let batch = batch.max(1);
    pipeline(
        |tx: mpsc::Sender<Vec<NewMemory>>| async move {
            let mut items = items.into_iter().peekable();
            let mut before: Vec<Memory> = Vec::new();
            while items.peek().is_some() {
                let chunk: Vec<NewMemory> = items.by_ref().take(batch).collect();
                before = prefetch_embeddings(engine, actor, &chunk, &before).await;
                if tx.send(chunk).await.is_err() {
                    break;
                }
            }
            Ok(())
        },
        |mut rx| async move {
            let mut done = 0;
            while let Some(chunk) = rx.recv().await {
                let n = chunk.len();
                engine.add(actor, chunk, false).await?;
                done += n;
                progress(n);
            }
            Ok(done)
        },
    )
    .await
}

/// Embeds the valid items of a batch into the engine's embedding cache and
/// returns them prepared. `before` is the batch before, which may still be
/// being written: a turn whose previous turn is there is embedded with it,
/// as the write will (it finds that turn in the store by then). Failures
/// are left for [`Engine::add`] to report: it validates and embeds again
/// whatever is not cached.
async fn prefetch_embeddings(
    engine: &Engine,
    actor: &Actor,
    chunk: &[NewMemory],
    before: &[Memory],
) -> Vec<Memory> {
    let now = engine.clock().now();
    let memories: Vec<_> = chunk
        .iter()
        .filter_map(|n| engine.prepare(actor, n.clone(), now).ok())
        .collect();
    if memories.is_empty() {
        return memories;
    }
    if let Err(e) = engine.embed_passages_after(before, &memories, None).await {
        tracing::debug!(error = %e, "embedding ahead of the write failed; the write embeds");
    }
    memories
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_pipeline_overlaps_its_stages_and_keeps_order() {
        let t0 = std::time::Instant::now();
        let out = pipeline(
            |tx| async move {
                for i in 0..6 {
                    tokio::time::sleep(std::time::Duration::from_millis(30)).await;
                    if tx.send(i).await.is_err() {
                        break;
                    }
                }
                Ok(())
            },
            |mut rx| async move {
                let mut got = Vec::new();
                while let Some(i) = rx.recv().await {
                    tokio::time::sleep(std::time::Duration::from_millis(30)).await;
                    got.push(i);
                }
                Ok(got)
            },
        )
        .await
        .unwrap();
        assert_eq!(out, vec![0, 1, 2, 3, 4, 5]);
        // Serial: 12 × 30 ms = 360 ms; overlapped: about 7 × 30 ms.
        assert!(
            t0.elapsed() < std::time::Duration::from_millis(330),
            "{:?}",
            t0.elapsed()
        );
    }

    #[tokio::test]
    async fn a_consumer_error_stops_the_producer() {
        let sent = std::sync::atomic::AtomicUsize::new(0);
        let err = pipeline(
            |tx| {
                let sent = &sent;
                async move {
                    for i in 0..1000 {
                        if tx.send(i).await.is_err() {
                            break;
                        }
                        sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    Ok(())
                }
            },
            |mut rx| async move {
                rx.recv().await;
                Err::<(), _>(crate::Error::internal("write failed"))
            },
        )
        .await;
        assert!(err.is_err());
        assert!(sent.load(std::sync::atomic::Ordering::Relaxed) <= DEPTH + 1);
    }
}
