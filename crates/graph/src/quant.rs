//! What static int8 quantisation needs to know of a network beyond its weights: the range
//! of every activation, measured by running the network in f32 on calibration inputs.
//! The ranges are keyed by the IR's value names (a node's name, [`INPUT_NAME`] for the
//! input), so that whoever writes the quantised network (the ONNX exporter) places each
//! range on the value it was measured on, whatever engine measured it.

use crate::{GraphError, HostTensor, INPUT_NAME};
use std::collections::BTreeMap;

/// The smallest and largest value each activation took over the calibration inputs
/// (min-max calibration, as ONNX Runtime's `quantize_static` defaults to).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActivationRanges {
    ranges: BTreeMap<String, (f32, f32)>,
    /// How many images the ranges were measured on.
    images: usize,
}

impl ActivationRanges {
    /// No ranges yet: widen them with [`ActivationRanges::observe`].
    pub fn new() -> ActivationRanges {
        ActivationRanges::default()
    }

    /// Widens the range of `value` to cover every element of `tensor`. A non-finite
    /// element is an error: no 8-bit range can hold it, and the network that made it is
    /// broken for these inputs.
    pub fn observe(&mut self, value: &str, tensor: &HostTensor) -> Result<(), GraphError> {
        let mut low = f32::INFINITY;
        let mut high = f32::NEG_INFINITY;
        for &x in &tensor.data {
            if !x.is_finite() {
                return Err(GraphError::Weights(format!(
                    "calibration: \"{value}\" took the value {x}; no 8-bit range holds it"
                )));
            }
            low = low.min(x);
            high = high.max(x);
        }
        if tensor.data.is_empty() {
            return Ok(());
        }
        let range = self.ranges.entry(value.to_string()).or_insert((low, high));
        range.0 = range.0.min(low);
        range.1 = range.1.max(high);
        Ok(())
    }

    /// Counts the images a calibration pass covered.
    pub fn add_images(&mut self, images: usize) {
        self.images += images;
    }

    /// The images the ranges were measured on.
    pub fn images(&self) -> usize {
        self.images
    }

    /// The measured range of a value (`None`: never observed).
    pub fn range(&self, value: &str) -> Option<(f32, f32)> {
        self.ranges.get(value).copied()
    }

    /// The input's range.
    pub fn input_range(&self) -> Option<(f32, f32)> {
        self.range(INPUT_NAME)
    }

    /// Every value's range, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, (f32, f32))> {
        self.ranges.iter().map(|(k, &v)| (k.as_str(), v))
    }
}

/// An asymmetric unsigned 8-bit quantisation of a range (ONNX's `QuantizeLinear` with a
/// `uint8` zero point): `q = clamp(round(x / scale) + zero_point, 0, 255)`. The range is
/// widened to hold 0 exactly, as ONNX Runtime's quantiser does, so that zero padding and
/// a ReLU's zeros quantise without error.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AffineU8 {
    pub scale: f32,
    pub zero_point: u8,
}

impl AffineU8 {
    /// The quantisation of `[low, high]`; a range of one point gets a scale of 1 (every
    /// value it held quantises exactly).
    pub fn of_range(low: f32, high: f32) -> AffineU8 {
        let low = low.min(0.0);
        let high = high.max(0.0);
        let span = high - low;
        if span <= 0.0 || !span.is_finite() {
            return AffineU8 {
                scale: 1.0,
                zero_point: 0,
            };
        }
        let scale = span / 255.0;
        let zero_point = (-low / scale).round().clamp(0.0, 255.0) as u8;
        AffineU8 { scale, zero_point }
    }

    /// `x` quantised and restored: what a `QuantizeLinear → DequantizeLinear` pair makes
    /// of it.
    pub fn round_trip(self, x: f32) -> f32 {
        let q = ((x / self.scale).round_ties_even() + self.zero_point as f32).clamp(0.0, 255.0);
        (q - self.zero_point as f32) * self.scale
    }
}

/// Symmetric signed 8-bit quantisation of each output channel of a weight (axis 0), zero
/// point 0 and values in `[-127, 127]` (the range ONNX Runtime and oneDNN use, so that a
/// VNNI product cannot overflow its 16-bit intermediate): one scale per channel.
#[derive(Clone, Debug, PartialEq)]
pub struct PerChannelI8 {
    pub scales: Vec<f32>,
    pub values: Vec<i8>,
}

impl PerChannelI8 {
    /// `weight` (output channels first) quantised per output channel.
    pub fn of(weight: &HostTensor) -> Result<PerChannelI8, GraphError> {
        PerChannelI8::with_least_scales(weight, &[])
    }

    /// The same, each channel's scale at least `least[c]` (where given): a bias quantised
    /// at the input's scale times the weight's must fit in `int32`, and in a deep
    /// random-weight network whose activations shrink layer by layer it would not
    /// (ONNX Runtime's quantiser widens the weight's scale the same way).
    pub fn with_least_scales(
        weight: &HostTensor,
        least: &[f32],
    ) -> Result<PerChannelI8, GraphError> {
        let channels = *weight.shape.first().ok_or_else(|| {
            GraphError::Weights("cannot quantise a weight without dimensions".into())
        })?;
        if channels == 0 || !weight.data.len().is_multiple_of(channels) {
            return Err(GraphError::Weights(format!(
                "a weight of shape {:?} has no whole output channels",
                weight.shape
            )));
        }
        let per_channel = weight.data.len() / channels;
        let mut scales = Vec::with_capacity(channels);
        let mut values = Vec::with_capacity(weight.data.len());
        for channel in weight.data.chunks(per_channel) {
            let largest = channel.iter().fold(0.0f32, |m, &x| m.max(x.abs()));
            if !largest.is_finite() {
                return Err(GraphError::Weights(
                    "a weight holds a non-finite value; it cannot be quantised".into(),
                ));
            }
            let natural = if largest > 0.0 { largest / 127.0 } else { 1.0 };
            let scale = least
                .get(scales.len())
                .map_or(natural, |&least| natural.max(least));
            scales.push(scale);
            values.extend(
                channel
                    .iter()
                    .map(|&x| (x / scale).round_ties_even().clamp(-127.0, 127.0) as i8),
            );
        }
        Ok(PerChannelI8 { scales, values })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(shape: Vec<usize>, data: Vec<f32>) -> HostTensor {
        HostTensor::new(shape, data).unwrap()
    }

    #[test]
    fn ranges_widen_over_every_observation_and_count_images() {
        let mut ranges = ActivationRanges::new();
        ranges
            .observe("conv1", &tensor(vec![1, 3], vec![-1.0, 0.5, 2.0]))
            .unwrap();
        ranges
            .observe("conv1", &tensor(vec![1, 3], vec![-0.5, 3.0, 0.0]))
            .unwrap();
        ranges.add_images(2);
        assert_eq!(ranges.range("conv1"), Some((-1.0, 3.0)));
        assert_eq!(ranges.range("conv2"), None);
        assert_eq!(ranges.images(), 2);
        let nan = ranges.observe("conv1", &tensor(vec![1], vec![f32::NAN]));
        assert!(nan.unwrap_err().to_string().contains("\"conv1\""));
    }

    #[test]
    fn an_activation_range_holds_zero_exactly_and_rounds_within_half_a_step() {
        // A hand computation: [-1, 3] spans 4, so a step is 4/255 and zero sits at
        // 1 / (4/255) = 63.75 → 64.
        let q = AffineU8::of_range(-1.0, 3.0);
        assert!((q.scale - 4.0 / 255.0).abs() < 1e-9);
        assert_eq!(q.zero_point, 64);
        assert_eq!(q.round_trip(0.0), 0.0);
        for x in [-1.0f32, -0.3, 0.7, 2.99] {
            assert!((q.round_trip(x) - x).abs() <= q.scale / 2.0 + 1e-6, "{x}");
        }
        // A ReLU's output: zero point 0, nothing below zero survives.
        let relu = AffineU8::of_range(0.0, 6.0);
        assert_eq!(relu.zero_point, 0);
        assert_eq!(relu.round_trip(-2.0), 0.0);
        // A range away from zero is widened to hold it.
        assert_eq!(AffineU8::of_range(2.0, 4.0).zero_point, 0);
        assert_eq!(AffineU8::of_range(0.0, 0.0).scale, 1.0);
    }

    #[test]
    fn weights_quantise_per_output_channel_symmetrically() {
        let w = tensor(vec![2, 2], vec![0.25, -1.0, 0.02, 0.005]);
        let q = PerChannelI8::of(&w).unwrap();
        assert_eq!(q.scales, vec![1.0 / 127.0, 0.02 / 127.0]);
        assert_eq!(q.values, vec![32, -127, 127, 32]);
        // A least scale coarsens its channel alone.
        let wide = PerChannelI8::with_least_scales(&w, &[2.0 / 127.0, 0.0]).unwrap();
        assert_eq!(wide.scales, vec![2.0 / 127.0, 0.02 / 127.0]);
        assert_eq!(wide.values, vec![16, -64, 127, 32]);
        let zero = PerChannelI8::of(&tensor(vec![1, 2], vec![0.0, 0.0])).unwrap();
        assert_eq!((zero.scales, zero.values), (vec![1.0], vec![0, 0]));
    }
}
