//! Per-operation read implementations on [`EdgeReadView`](crate::read_view::EdgeReadView): one
//! file per operation, all running over the same consistent segment snapshot.

mod count;
mod facet;
mod grouping;
mod info;
mod matrix;
mod query;
mod retrieve;
mod scroll;
mod search;
mod text;

pub use self::grouping::Group;
pub use self::info::ShardInfo;
pub use self::matrix::SearchMatrixResponse;
