//! One query's candidates as the learned stage sees them, with their
//! judgments: what `mnemo eval`'s runner collects and `mnemo tune` fits on.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::domain::learned::{Features, FEATURES, N};

/// One candidate of one query.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub doc_id: String,
    pub features: Features,
    pub relevance: u32,
}

/// One query's candidates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueryRows {
    pub set: String,
    pub query_id: String,
    pub user_id: String,
    /// Relevant documents the query has (candidates or not).
    pub relevant: usize,
    pub rows: Vec<Row>,
}

/// Features by name (a breakdown's) in [`FEATURES`] order; absent = 0.
pub fn ordered(named: &BTreeMap<String, f32>) -> Features {
    let mut x = [0.0; N];
    for (i, name) in FEATURES.iter().enumerate() {
        x[i] = named.get(*name).copied().unwrap_or(0.0);
    }
    x
}
