//! How an int8 run's network was quantised, recorded with its result: the scheme, the
//! calibration that measured its activation ranges, and what the stack really ran in
//! int8 (a stack may keep layers in f32 it cannot quantise, silently).

use serde::{Deserialize, Serialize};

/// Calibration images when the run names no count (`--calibration N`): what the
/// measurements of issue #47 used, and enough for min-max ranges of random images.
pub const DEFAULT_CALIBRATION_IMAGES: usize = 8;
/// The most calibration images a run may ask for: calibration keeps every activation of
/// a pass, and min-max ranges stop moving long before this.
pub const MAX_CALIBRATION_IMAGES: usize = 1024;

/// The quantisation scheme cnnbench's QDQ export writes, in words.
pub const QDQ_SCHEME: &str = "static post-training, QDQ: weights int8 symmetric per output channel, activations uint8 per tensor, biases int32";

/// A quantised run's record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuantizationRecord {
    /// The scheme ([`QDQ_SCHEME`]).
    pub scheme: String,
    pub calibration: CalibrationRecord,
}

/// How the activation ranges were measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CalibrationRecord {
    /// `min-max`: each activation's smallest and largest value.
    pub method: String,
    /// Images the ranges were measured on.
    pub images: usize,
    /// The seed random images were drawn from (none for the user's own images).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// What the images were, in words.
    pub data: String,
    /// Whether the images were real data: ranges from random images say nothing of the
    /// accuracy the network keeps on real ones.
    pub real_data: bool,
    /// The engine that measured the ranges: the one whose f32 interpreter ran the
    /// calibration images, or the int8 engine whose own quantiser's observers did.
    pub engine: String,
}

impl CalibrationRecord {
    /// The caveat a result from random calibration images carries.
    pub fn caveat(&self) -> Option<String> {
        (!self.real_data).then(|| {
            format!(
                "int8 ranges calibrated on {} random images: the speed is int8's, but the accuracy on real data was not measured",
                self.images
            )
        })
    }
}
