use crate::common::ambient;
use crate::common::reason::reason;

use crate::segment::common::operation_error::OperationResult;
use crate::segment::index::PayloadIndexRead;
use crate::segment::index::field_index::PayloadBlockCondition;
use crate::segment::index::hnsw_index::config::HnswGraphConfig;
use crate::segment::index::hnsw_index::hnsw::old_index::OldIndex;
use crate::segment::index::struct_payload_index::StructPayloadIndex;
use crate::segment::types::Condition::Field;
use crate::segment::types::{Filter, PayloadFieldSchema, PayloadKeyType, PayloadSchemaType};

/// Range blocks of a numeric `field` with the ranges the old index used, and their
/// cardinalities in the new segment.
///
/// Range blocks are histogram ranges, so they move when points are added or removed, and a
/// block that straddles two old ones has few old links between its points. Blocks with the old
/// ranges can start from the old graph like keyword blocks do. Match blocks of an integer field
/// with `lookup` are left out: a value is the same block in both segments, and a value that
/// reached the threshold only since the old build has no old block, so they come from the new
/// index. Returns `None`, to compute new blocks, if the field is not numeric, if its schema or
/// the threshold changed, if the old index had no range blocks for it, or if a range grew to more
/// than twice its old size.
pub(super) fn old_range_blocks(
    old_index: &OldIndex<'_>,
    field: &PayloadKeyType,
    schema: &PayloadFieldSchema,
    payload_index: &StructPayloadIndex,
    config: &HnswGraphConfig,
) -> OperationResult<Option<Vec<PayloadBlockCondition>>> {
    if !matches!(
        schema.kind(),
        PayloadSchemaType::Integer | PayloadSchemaType::Float | PayloadSchemaType::Datetime
    ) || old_index.index.config.full_scan_threshold != config.full_scan_threshold
    {
        return Ok(None);
    }
    let old_payload_index = old_index.index.payload_index.borrow();
    // The same kind is not enough: an integer field indexed without `range` now has no range
    // blocks, whatever the old index had.
    let old_schema = old_payload_index.with_view(|v| v.indexed_fields().remove(field));
    if old_schema.as_ref() != Some(schema) {
        return Ok(None);
    }
    let mut blocks = Vec::new();
    old_payload_index.with_view(|v| {
        v.for_each_payload_block(field, config.full_scan_threshold, &mut |block| {
            if block.condition.range.is_some() {
                blocks.push(block);
            }
            Ok(())
        })
    })?;
    drop(old_payload_index);
    if blocks.is_empty() {
        return Ok(None);
    }

    let _scope = ambient::unmeasured_guard(reason("Internal operation"));
    for block in &mut blocks {
        let filter = Filter::new_must(Field(block.condition.clone()));
        let cardinality = payload_index
            .with_view(|v| v.estimate_cardinality(&filter))?
            .exp;
        if cardinality > 2 * block.cardinality.max(config.full_scan_threshold) {
            return Ok(None);
        }
        block.cardinality = cardinality;
    }
    Ok(Some(blocks))
}
