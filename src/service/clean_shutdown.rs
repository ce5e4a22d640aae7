//! Starting without the full reconcile after a clean shutdown.
//!
//! The start-up reconcile compares every indexed memory's version in the
//! store with both indexes: at a million memories that is three reads of a
//! million entries on every start. After a clean shutdown it is not needed:
//! `mnemo serve`'s repair loop (`repair.rs`) had checked the change feed up
//! to some position, and every later change is in the feed too. So at a
//! clean stop (`Node::stop`, after the loop stopped and the indexes
//! committed) the node writes that position to `indexes.clean` in the data
//! directory; the next `mnemo serve` on the embedded defaults removes the
//! file (durably, before serving) and, instead of the reconcile, starts its
//! repair loop at that position, which applies the changes since within a
//! repair interval. Without the file (a crash, kill -9, a failed stop, a
//! first start) the full reconcile runs as before.
//!
//! Every other command that opens the engine (`mnemo ingest`, `add`,
//! `search`, `stats`, `forget`, `export`, `import`, `verify-erasure`,
//! `jobs run`) opens it the same way through
//! [`CommandEngine`](super::command_engine::CommandEngine): it takes the
//! file and, having no repair loop, applies the changes since at once
//! ([`Repairer::catch_up`](super::repair::Repairer::catch_up)) before it does anything; at its close it records
//! the file again at the feed head, unless one of its own index writes
//! failed (then the next start reconciles fully). At a million memories a
//! command so starts in seconds instead of spending 14-17 s on the
//! reconcile. A command that fails or is killed leaves no file: the next
//! start reconciles fully. `mnemo reindex` and `mnemo migrate` rebuild the
//! indexes and open without it.
//!
//! Not used in clustered mode (other nodes write the shared collection
//! while this one is down). Restoring `mnemo.db` from a backup, or replacing
//! an index directory by hand, must remove the file (the start then
//! reconciles fully); a marker whose position is past the store's feed head
//! (an older store) is ignored.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::Result;

/// The file, in the data directory.
pub const FILE: &str = "indexes.clean";

#[derive(Debug, Serialize, Deserialize)]
struct Marker {
    /// The change-feed position up to which the indexes agree with the store.
    feed_position: i64,
}

fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE)
}

/// Writes the marker atomically: a temporary file, synced, renamed over it,
/// and the directory synced.
pub(crate) fn record(data_dir: &Path, feed_position: i64) -> Result<()> {
    let tmp = data_dir.join(format!("{FILE}.tmp"));
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(
        &serde_json::to_vec(&Marker { feed_position }).map_err(crate::error::Error::internal)?,
    )?;
    f.sync_all()?;
    std::fs::rename(&tmp, path(data_dir))?;
    std::fs::File::open(data_dir)?.sync_all()?;
    Ok(())
}

/// Reads and removes the marker (the removal synced before this returns,
/// so a crash from here on finds no marker). `None` when there is none or
/// it cannot be read (then the caller reconciles fully).
pub(crate) fn take(data_dir: &Path) -> Result<Option<i64>> {
    let p = path(data_dir);
    let bytes = match std::fs::read(&p) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    std::fs::remove_file(&p)?;
    std::fs::File::open(data_dir)?.sync_all()?;
    Ok(serde_json::from_slice::<Marker>(&bytes)
        .ok()
        .map(|m| m.feed_position))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_is_read_once() {
        let dir = tempfile::TempDir::new().unwrap();
        assert_eq!(take(dir.path()).unwrap(), None);
        record(dir.path(), 42).unwrap();
        assert_eq!(take(dir.path()).unwrap(), Some(42));
        assert!(!dir.path().join(FILE).exists());
        assert_eq!(take(dir.path()).unwrap(), None);
        std::fs::write(dir.path().join(FILE), b"not json").unwrap();
        assert_eq!(
            take(dir.path()).unwrap(),
            None,
            "unreadable: reconcile fully"
        );
        assert!(!dir.path().join(FILE).exists());
    }
}
