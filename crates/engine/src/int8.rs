//! What an int8 session needs beyond another precision's: the network's calibration,
//! its activation ranges and the images they were measured on. Whether it then ran in
//! int8 is [`crate::coverage`]'s.

use crate::{Precision, SessionConfig};
use cnnbench_graph::quant::ActivationRanges;
use cnnbench_graph::HostTensor;

/// A network's calibration for int8, measured beforehand on the session's weights.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Int8Calibration {
    /// The activation ranges cnnbench's QDQ export quantises to (ONNX Runtime and
    /// OpenVINO run that very network).
    pub ranges: ActivationRanges,
    /// The images the ranges were measured on, one a tensor (batch 1), in order: a stack
    /// that quantises with its own observers (PyTorch's PT2E) calibrates on the same
    /// images rather than on ranges another engine measured.
    pub images: Vec<HostTensor>,
}

/// How a stack that quantises an int8 network itself did it, in words, for the result's
/// record in place of cnnbench's QDQ scheme.
#[derive(Clone, Debug, PartialEq)]
pub struct OwnQuantization {
    /// The scheme: what is quantised, how, by which quantiser.
    pub scheme: String,
    /// How the activation ranges were measured (the stack's observers).
    pub method: String,
}

/// The calibration an int8 session quantises with (`None` in every other precision);
/// an int8 session without one is refused, naming `engine`.
pub fn calibration_of<'c>(
    config: &'c SessionConfig,
    engine: &str,
) -> anyhow::Result<Option<&'c Int8Calibration>> {
    match config.precision {
        Precision::Int8 => config.calibration.as_deref().map(Some).ok_or_else(|| {
            anyhow::anyhow!(
                "{engine}: an int8 session needs the network's calibration (its calibrated activation ranges and the images they were measured on)"
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

/// The activation ranges an int8 session quantises to (`None` in every other
/// precision); an int8 session without them is refused, naming `engine`.
pub fn ranges_of<'c>(
    config: &'c SessionConfig,
    engine: &str,
) -> anyhow::Result<Option<&'c ActivationRanges>> {
    Ok(calibration_of(config, engine)?.map(|c| &c.ranges))
}
