//! Clustered mode's settings: the Qdrant server every node shares
//! ([`QdrantArgs`], on every command that opens the vector index) and this
//! node's name in the cluster registry ([`NodeArgs`], `mnemo serve` only).

use crate::service::cluster::default_node_id;
use crate::vector::{CollectionLayout, QdrantServerConfig, VectorBackend};

/// Where the vectors live when they are not in the data directory: a Qdrant
/// server's collection, which every node of a cluster shares. Flattened
/// into the commands that open the vector index, under their own heading.
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Qdrant options")]
pub struct QdrantArgs {
    /// Clustered mode: keep the vectors in this Qdrant server's collection
    /// (gRPC URL, e.g. `http://qdrant:6334`) instead of the data directory.
    #[arg(long, env = "MNEMO_QDRANT_URL")]
    pub qdrant_url: Option<String>,
    /// The Qdrant API key, if the server requires one (prefer the
    /// environment variable: command lines are visible to other users).
    #[arg(long, env = "MNEMO_QDRANT_API_KEY", hide_env_values = true)]
    pub qdrant_api_key: Option<String>,
    /// The Qdrant collection every node shares.
    #[arg(
        long,
        env = "MNEMO_QDRANT_COLLECTION",
        default_value = crate::vector::qdrant::DEFAULT_COLLECTION
    )]
    pub qdrant_collection: String,
    /// Shards of the collection when Mnemo creates it (Qdrant's default
    /// when absent). Fixed at creation.
    #[arg(long, env = "MNEMO_QDRANT_SHARDS")]
    pub qdrant_shards: Option<u32>,
    /// Replicas of each shard when Mnemo creates the collection (Qdrant's
    /// default, 1, when absent). 2 or more on a cluster survives a lost peer.
    #[arg(long, env = "MNEMO_QDRANT_REPLICATION_FACTOR")]
    pub qdrant_replication_factor: Option<u32>,
    /// Replicas that must apply a write before Qdrant acknowledges it, when
    /// Mnemo creates the collection (1 when absent).
    #[arg(long, env = "MNEMO_QDRANT_WRITE_CONSISTENCY")]
    pub qdrant_write_consistency: Option<u32>,
}

impl Default for QdrantArgs {
    fn default() -> Self {
        QdrantArgs {
            qdrant_url: None,
            qdrant_api_key: None,
            qdrant_collection: crate::vector::qdrant::DEFAULT_COLLECTION.to_string(),
            qdrant_shards: None,
            qdrant_replication_factor: None,
            qdrant_write_consistency: None,
        }
    }
}

impl QdrantArgs {
    /// The embedded index, or the Qdrant server `--qdrant-url` names.
    pub fn vector_backend(&self) -> VectorBackend {
        match self.qdrant_url.as_deref().filter(|u| !u.is_empty()) {
            None => VectorBackend::Embedded,
            Some(url) => {
                let mut config = QdrantServerConfig::new(url);
                config.api_key = self.qdrant_api_key.clone().filter(|k| !k.is_empty());
                config.collection = self.qdrant_collection.clone();
                config.layout = CollectionLayout {
                    shard_number: self.qdrant_shards,
                    replication_factor: self.qdrant_replication_factor,
                    write_consistency_factor: self.qdrant_write_consistency,
                };
                VectorBackend::Server(config)
            }
        }
    }
}

/// `mnemo serve`'s name in the cluster registry.
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = "Cluster options")]
pub struct NodeArgs {
    /// This node's name in the cluster registry (clustered `serve`); the host
    /// name with a random suffix when absent.
    #[arg(long, env = "MNEMO_NODE_ID")]
    pub node_id: Option<String>,
}

/// Clustered mode's settings as the command gave them: its Qdrant options
/// and, for `mnemo serve`, the node's name.
#[derive(Debug, Clone, Default)]
pub struct ClusterArgs {
    pub qdrant: QdrantArgs,
    pub node_id: Option<String>,
}

impl ClusterArgs {
    /// The embedded index, or the Qdrant server `--qdrant-url` names.
    pub fn vector_backend(&self) -> VectorBackend {
        self.qdrant.vector_backend()
    }

    /// The configured node id, or a fresh default one.
    pub fn node_id(&self) -> String {
        self.node_id
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(default_node_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_ids_are_valid_and_distinct() {
        let (x, y) = (default_node_id(), default_node_id());
        assert_ne!(x, y);
        assert!(crate::domain::validate::validate_id("node_id", &x).is_ok());
        let args = ClusterArgs {
            node_id: Some("api-1".into()),
            ..ClusterArgs::default()
        };
        assert_eq!(args.node_id(), "api-1");
        assert!(matches!(args.vector_backend(), VectorBackend::Embedded));
        let args = ClusterArgs {
            qdrant: QdrantArgs {
                qdrant_url: Some("http://qdrant:6334".into()),
                qdrant_api_key: Some(String::new()),
                ..QdrantArgs::default()
            },
            ..ClusterArgs::default()
        };
        match args.vector_backend() {
            VectorBackend::Server(s) => {
                assert_eq!(s.url, "http://qdrant:6334");
                assert_eq!(s.collection, crate::vector::qdrant::DEFAULT_COLLECTION);
                assert_eq!(s.api_key, None, "an empty key means none");
            }
            other => panic!("{other:?}"),
        }
    }
}
