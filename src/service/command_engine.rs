//! An engine opened for one command-line command: it starts from a recorded
//! clean close and records one again when it closes (the marker and why it
//! is safe: [`clean_shutdown`](super::clean_shutdown)).

use std::path::PathBuf;

use super::clean_shutdown::record;
use super::repair::Repairer;
use super::{EngineBuilder, ReconcileReport};
use crate::error::Result;
use crate::Engine;

/// An engine opened for one command-line command, which closes as a clean
/// `mnemo serve` stop does (see the module documentation).
pub struct CommandEngine {
    engine: Engine,
    reconciled: ReconcileReport,
    /// Where the clean close is recorded: the data directory, or `None` in
    /// clustered mode (other nodes write the shared collection).
    record_in: Option<PathBuf>,
}

impl CommandEngine {
    /// Opens `builder`'s engine trusting a recorded clean close, and applies
    /// the changes since it before returning.
    pub async fn open(builder: EngineBuilder) -> Result<Self> {
        let data_dir = builder.data_dir().to_path_buf();
        let opened = builder.trust_clean_shutdown(true).build().await?;
        if opened.reconciled.from_clean_shutdown {
            Repairer::new(opened.engine.clone())
                .await?
                .catch_up()
                .await?;
        }
        Ok(CommandEngine {
            record_in: opened.follower.is_none().then_some(data_dir),
            engine: opened.engine,
            reconciled: opened.reconciled,
        })
    }

    /// What the open reconciled (`from_clean_shutdown` when it used a
    /// recorded clean close instead).
    pub fn reconciled(&self) -> &ReconcileReport {
        &self.reconciled
    }

    /// Shuts the engine down and records a clean close at the feed head
    /// when no index write of this process failed: the indexes agreed with
    /// the store at the open, and every write since was indexed.
    pub async fn close(self) -> Result<()> {
        let head = self.engine.store().change_feed_head().await?;
        let consistent = self.engine.repair_status().failed_index_writes() == 0;
        self.engine.shutdown().await?;
        if let (Some(dir), true) = (self.record_in, consistent) {
            record(&dir, head)?;
        }
        Ok(())
    }
}

impl std::ops::Deref for CommandEngine {
    type Target = Engine;

    fn deref(&self) -> &Engine {
        &self.engine
    }
}
