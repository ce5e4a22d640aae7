//! A running Mnemo node: the engine and everything it does in the
//! background, started together and stopped together, whatever the entry
//! point (`mnemo serve`, `mnemo mcp`).
//!
//! Started: the index repair loop (`repair.rs`), the index optimiser
//! (`service/index.rs`), the lifecycle jobs
//! (`jobs/`), the erasure sweep (`service/erasure.rs`), in clustered mode
//! the change-feed follower (`service/cluster.rs`), and with an agent loop
//! its idle compactor (`agent/threads.rs`), each a [`PeriodicTask`] on one
//! [`Runner`].
//!
//! One-shot work a request starts (`POST /v1/evals`, an export's writer)
//! runs on the same runner through [`Node::spawner`].
//!
//! Stopped in order ([`Node::stop`]): the tasks (a run in progress
//! finishes, no new one starts; one-shot work is cancelled and waited for), then the erasures running on this node
//! (waited for, as an intent would make the next start finish them anyway,
//! but not half done now), the agent's extraction in flight, the node's
//! entry in the cluster registry, and last `Engine::shutdown` (indexes
//! committed, store checkpointed).
//!
//! [`PeriodicTask`]: crate::runner::PeriodicTask

use crate::agent::Agent;
use crate::error::Result;
use crate::jobs::LifecycleJobs;
use crate::runner::{Runner, Spawner};
use crate::service::cluster::LexicalFollower;
use crate::service::erasure::ErasureSweep;
use crate::service::repair::RepairTask;
use crate::service::{Engine, IndexOptimizer};

/// What a node runs besides the engine's own tasks.
#[derive(Default)]
pub struct NodeParts {
    /// Clustered mode: the change-feed follower, registered at open.
    pub follower: Option<LexicalFollower>,
    /// The agent loop, whose idle threads are compacted in the background
    /// and whose extraction in flight is waited for at stop.
    pub agent: Option<Agent>,
    /// Embedded mode: the data directory, where a clean stop records how far
    /// the indexes agree with the store (`service/clean_shutdown.rs`).
    pub clean_shutdown_dir: Option<std::path::PathBuf>,
}

/// The engine and its background work.
pub struct Node {
    engine: Engine,
    runner: Runner,
    node_id: Option<String>,
    agent: Option<Agent>,
    clean_shutdown_dir: Option<std::path::PathBuf>,
}

impl Node {
    /// Starts every background task of `engine`.
    pub async fn start(engine: Engine, parts: NodeParts) -> Result<Node> {
        let mut runner = Runner::new();
        // Heals index writes that failed after their store commit.
        runner.spawn(RepairTask::new(&engine).await?);
        runner.spawn(IndexOptimizer::new(engine.clone()));
        runner.spawn(LifecycleJobs::new(engine.clone()));
        // Resumes erasures whose task died with another node, or failed.
        runner.spawn(ErasureSweep::new(engine.clone()));
        let node_id = parts.follower.as_ref().map(|f| f.node_id().to_string());
        if let Some(follower) = parts.follower {
            runner.spawn(follower);
        }
        if let Some(agent) = &parts.agent {
            runner.spawn(agent.idle_compactor());
        }
        Ok(Node {
            engine,
            runner,
            node_id,
            agent: parts.agent,
            clean_shutdown_dir: parts.clean_shutdown_dir,
        })
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Runs one-shot work (an evaluation, an export's writer) on this node's
    /// runner: counted at `/metrics`, cancelled and waited for at stop.
    pub fn spawner(&self) -> Spawner {
        self.runner.spawner()
    }

    /// This node's id in the cluster registry (clustered mode).
    pub fn node_id(&self) -> Option<&str> {
        self.node_id.as_deref()
    }

    /// Stops everything, in order (see the module documentation).
    pub async fn stop(self) -> Result<()> {
        self.runner.stop().await;
        let erasures = self.engine.erasure_jobs().running();
        if erasures > 0 {
            tracing::info!(
                erasures,
                "waiting for running erasures to finish (signal again to force)"
            );
        }
        self.engine.wait_erasures().await;
        if let Some(agent) = &self.agent {
            // Extraction in flight finishes before the store closes.
            agent.wait_idle().await;
        }
        if let Some(node_id) = &self.node_id {
            if let Err(e) = self.engine.feed().remove_node(node_id).await {
                tracing::warn!(error = %e, "could not leave the cluster registry");
            }
        }
        self.engine.shutdown().await?;
        // The repair loop has stopped and the indexes are committed: they
        // agree with the store up to where the loop had checked the feed.
        if let (Some(dir), Some(position)) = (
            &self.clean_shutdown_dir,
            self.engine.repair_status().consistent_up_to(),
        ) {
            if self.node_id.is_none() {
                crate::service::clean_shutdown::record(dir, position)?;
            }
        }
        Ok(())
    }
}
