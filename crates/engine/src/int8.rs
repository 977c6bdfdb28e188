//! What an int8 session needs beyond another precision's: the network's calibrated
//! activation ranges. Whether it then ran in int8 is [`crate::coverage`]'s.

use crate::{Precision, SessionConfig};
use cnnbench_graph::quant::ActivationRanges;

/// The activation ranges an int8 session quantises to (`None` in every other
/// precision); an int8 session without them is refused, naming `engine`.
pub fn ranges_of<'c>(
    config: &'c SessionConfig,
    engine: &str,
) -> anyhow::Result<Option<&'c ActivationRanges>> {
    match config.precision {
        Precision::Int8 => config.calibration.as_deref().map(Some).ok_or_else(|| {
            anyhow::anyhow!(
                "{engine}: an int8 session needs the network's calibrated activation ranges"
            )
        }),
        Precision::F32
        | Precision::Tf32
        | Precision::Bf16
        | Precision::F16
        | Precision::AmpBf16
        | Precision::AmpF16 => Ok(None),
    }
}
