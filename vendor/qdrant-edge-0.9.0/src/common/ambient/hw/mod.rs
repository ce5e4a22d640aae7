mod iter;
mod measure;
mod metric;

pub use iter::HwMeasurementIteratorExt;
#[cfg(any(test, feature = "testing"))]
pub use measure::pending;
pub use measure::{accumulate_request, cpu_utilization, is_measured, scale_cpu};
pub use metric::{HardwareData, HwMetric, HwScale, HwSharedDrain};
