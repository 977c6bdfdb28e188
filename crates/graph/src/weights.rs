//! A network's weights outside any engine: f32 tensors in PyTorch's layout, keyed
//! `<node>.<tensor>` (`conv1.weight`, `bn1.running_var`, `fc.bias`). Engines export and
//! import them so two engines can run the very same network (`cnnbench verify`), and
//! importers keep the weights a model file carries. On disk they are a safetensors
//! file, which PyTorch, burn and numpy all read.

use crate::error::GraphError;
use crate::graph::Graph;
use crate::ops::WeightInit;
use std::collections::BTreeMap;
use std::path::Path;

/// One weight tensor in host memory, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

impl HostTensor {
    /// Fails when `data` does not hold exactly the elements `shape` asks for.
    pub fn new(shape: Vec<usize>, data: Vec<f32>) -> Result<Self, GraphError> {
        let elements = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
        if elements != Some(data.len()) {
            return Err(GraphError::Weights(format!(
                "a tensor of shape {shape:?} needs {} values, got {}",
                elements.map_or("too many".to_string(), |e| e.to_string()),
                data.len()
            )));
        }
        Ok(Self { shape, data })
    }

    /// Zeros of `shape`: the gradient a value gets when the loss does not reach it.
    pub fn zeros(shape: Vec<usize>) -> Self {
        let n: usize = shape.iter().product();
        Self {
            shape,
            data: vec![0.0; n],
        }
    }

    /// Deterministic standard-normal values from `seed` (Box–Muller over SplitMix64), so
    /// every engine can be fed the same input without sharing a random generator.
    pub fn standard_normal(shape: Vec<usize>, seed: u64) -> Self {
        let n: usize = shape.iter().product();
        let mut rng = crate::SplitMix64::new(seed);
        let mut data = Vec::with_capacity(n);
        while data.len() < n {
            let (a, b) = rng.standard_normal_pair();
            data.push(a as f32);
            if data.len() < n {
                data.push(b as f32);
            }
        }
        Self { shape, data }
    }

    /// Largest absolute value (0 for an empty tensor).
    pub fn max_abs(&self) -> f32 {
        self.data.iter().fold(0.0f32, |m, v| m.max(v.abs()))
    }
}

/// How far `actual` is from `reference`: the largest element-wise difference relative to
/// the reference's largest magnitude. Scaling by the whole tensor (not each element)
/// keeps values near zero from turning rounding noise into huge ratios. NaN in either
/// tensor gives infinity; different shapes are an error.
pub fn max_relative_error(actual: &HostTensor, reference: &HostTensor) -> Result<f64, GraphError> {
    if actual.shape != reference.shape {
        return Err(GraphError::Weights(format!(
            "cannot compare tensors of shapes {:?} and {:?}",
            actual.shape, reference.shape
        )));
    }
    let mut max_diff = 0.0f64;
    for (a, r) in actual.data.iter().zip(&reference.data) {
        let diff = (*a as f64 - *r as f64).abs();
        if diff.is_nan() {
            return Ok(f64::INFINITY);
        }
        max_diff = max_diff.max(diff);
    }
    let scale = reference.max_abs() as f64;
    if max_diff == 0.0 {
        return Ok(0.0);
    }
    Ok(max_diff / scale.max(f64::MIN_POSITIVE))
}

/// `‖actual − reference‖₂ / ‖reference‖₂`: the error of the tensor as a whole, which a
/// few elements that legitimately differ (a ReLU whose input rounds to the other side of
/// zero in one engine) move far less than the largest element-wise difference. NaN gives
/// infinity; different shapes are an error.
pub fn relative_l2_error(actual: &HostTensor, reference: &HostTensor) -> Result<f64, GraphError> {
    if actual.shape != reference.shape {
        return Err(GraphError::Weights(format!(
            "cannot compare tensors of shapes {:?} and {:?}",
            actual.shape, reference.shape
        )));
    }
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (a, r) in actual.data.iter().zip(&reference.data) {
        let d = *a as f64 - *r as f64;
        diff += d * d;
        norm += (*r as f64) * (*r as f64);
    }
    if diff.is_nan() {
        return Ok(f64::INFINITY);
    }
    if diff == 0.0 {
        return Ok(0.0);
    }
    Ok((diff / norm.max(f64::MIN_POSITIVE)).sqrt())
}

/// The cosine of the angle between two tensors as vectors: 1 when one is a positive
/// multiple of the other. TorchBench's check of an int8 model against its f32 original
/// (a quantised network's outputs move a little everywhere; their direction, which
/// ranks the classes, barely does). NaN gives −1; different shapes are an error.
pub fn cosine_similarity(actual: &HostTensor, reference: &HostTensor) -> Result<f64, GraphError> {
    if actual.shape != reference.shape {
        return Err(GraphError::Weights(format!(
            "cannot compare tensors of shapes {:?} and {:?}",
            actual.shape, reference.shape
        )));
    }
    let (mut dot, mut aa, mut rr) = (0.0f64, 0.0f64, 0.0f64);
    for (a, r) in actual.data.iter().zip(&reference.data) {
        let (a, r) = (*a as f64, *r as f64);
        dot += a * r;
        aa += a * a;
        rr += r * r;
    }
    if dot.is_nan() || aa.is_nan() || rr.is_nan() {
        return Ok(-1.0);
    }
    if aa == 0.0 && rr == 0.0 {
        return Ok(1.0);
    }
    Ok(dot / (aa.sqrt() * rr.sqrt()).max(f64::MIN_POSITIVE))
}

/// Where one of a graph's weight tensors lives and what it looks like.
#[derive(Clone, Debug, PartialEq)]
pub struct WeightSpec {
    /// `<node>.<tensor>`.
    pub key: String,
    /// Index of the node in [`Graph::nodes`].
    pub node: usize,
    pub shape: Vec<usize>,
    /// False for state that is not trained (batch-norm running statistics).
    pub trainable: bool,
    /// How PyTorch's layer initialises it.
    pub init: WeightInit,
}

impl Graph {
    /// Every weight tensor of the network, in node order.
    pub fn weight_specs(&self) -> Vec<WeightSpec> {
        let mut specs = Vec::new();
        for (index, node) in self.nodes().iter().enumerate() {
            for weight in node.op.weight_specs() {
                specs.push(WeightSpec {
                    key: format!("{}.{}", node.name, weight.name),
                    node: index,
                    shape: weight.shape,
                    trainable: weight.trainable,
                    init: weight.init,
                });
            }
        }
        specs
    }
}

/// A set of named weight tensors (all of a network's, or the subset a file carried).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Weights {
    tensors: BTreeMap<String, HostTensor>,
}

/// Limit on one weights file, so a corrupt header cannot ask for absurd memory.
const MAX_WEIGHTS_FILE_BYTES: u64 = 16 << 30;

impl Weights {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn insert(&mut self, key: impl Into<String>, tensor: HostTensor) {
        self.tensors.insert(key.into(), tensor);
    }
    pub fn get(&self, key: &str) -> Option<&HostTensor> {
        self.tensors.get(key)
    }
    pub fn iter(&self) -> impl Iterator<Item = (&String, &HostTensor)> {
        self.tensors.iter()
    }
    pub fn len(&self) -> usize {
        self.tensors.len()
    }
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }
    /// Total number of values.
    pub fn elements(&self) -> usize {
        self.tensors.values().map(|t| t.data.len()).sum()
    }

    /// Checks that these weights fit `graph`: every key names one of its tensors with
    /// the right shape and, when `complete`, every tensor of the graph is present.
    pub fn check(&self, graph: &Graph, complete: bool) -> Result<(), GraphError> {
        let specs = graph.weight_specs();
        let expected: BTreeMap<&str, &WeightSpec> =
            specs.iter().map(|s| (s.key.as_str(), s)).collect();
        for (key, tensor) in &self.tensors {
            let Some(spec) = expected.get(key.as_str()) else {
                return Err(GraphError::Weights(format!(
                    "\"{key}\" is not a tensor of model \"{}\" (its tensors are named <node>.<tensor>, e.g. \"{}\")",
                    graph.name(),
                    specs.first().map_or("conv1.weight", |s| s.key.as_str())
                )));
            };
            if tensor.shape != spec.shape {
                return Err(GraphError::Weights(format!(
                    "\"{key}\" has shape {:?} but model \"{}\" needs {:?}",
                    tensor.shape,
                    graph.name(),
                    spec.shape
                )));
            }
        }
        if complete {
            let missing: Vec<&str> = specs
                .iter()
                .map(|s| s.key.as_str())
                .filter(|k| !self.tensors.contains_key(*k))
                .collect();
            if !missing.is_empty() {
                let shown: Vec<&str> = missing.iter().take(5).copied().collect();
                return Err(GraphError::Weights(format!(
                    "{} of model \"{}\"'s {} tensors are missing: {}{}",
                    missing.len(),
                    graph.name(),
                    specs.len(),
                    shown.join(", "),
                    if missing.len() > shown.len() {
                        ", …"
                    } else {
                        ""
                    }
                )));
            }
        }
        Ok(())
    }

    /// The safetensors encoding (little-endian f32, keys sorted).
    pub fn to_safetensors(&self) -> Result<Vec<u8>, GraphError> {
        let buffers: Vec<(&String, &HostTensor, Vec<u8>)> = self
            .tensors
            .iter()
            .map(|(key, t)| {
                (
                    key,
                    t,
                    t.data.iter().flat_map(|v| v.to_le_bytes()).collect(),
                )
            })
            .collect();
        let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = buffers
            .iter()
            .map(|(key, t, bytes)| {
                safetensors::tensor::TensorView::new(
                    safetensors::Dtype::F32,
                    t.shape.clone(),
                    bytes,
                )
                .map(|view| ((*key).clone(), view))
                .map_err(|e| GraphError::Weights(format!("tensor \"{key}\": {e}")))
            })
            .collect::<Result<_, _>>()?;
        safetensors::tensor::serialize(views, None)
            .map_err(|e| GraphError::Weights(format!("cannot encode safetensors: {e}")))
    }

    /// Reads a safetensors buffer; f32 and f64 tensors are accepted (f64 is narrowed).
    pub fn from_safetensors(bytes: &[u8]) -> Result<Self, GraphError> {
        let file = safetensors::SafeTensors::deserialize(bytes)
            .map_err(|e| GraphError::Weights(format!("not a valid safetensors file: {e}")))?;
        let mut weights = Weights::new();
        for (key, view) in file.tensors() {
            let data: Vec<f32> = match view.dtype() {
                safetensors::Dtype::F32 => view
                    .data()
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect(),
                safetensors::Dtype::F64 => view
                    .data()
                    .chunks_exact(8)
                    .map(|b| {
                        f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f32
                    })
                    .collect(),
                other => {
                    return Err(GraphError::Weights(format!(
                        "tensor \"{key}\" is {other:?}; cnnbench reads F32 or F64 weights (convert with torch: t.float())"
                    )))
                }
            };
            weights.insert(key, HostTensor::new(view.shape().to_vec(), data)?);
        }
        Ok(weights)
    }

    /// Writes a safetensors file.
    pub fn save(&self, path: &Path) -> Result<(), GraphError> {
        let bytes = self.to_safetensors()?;
        std::fs::write(path, bytes)
            .map_err(|e| GraphError::Weights(format!("cannot write {}: {e}", path.display())))
    }

    /// Reads a safetensors file (a regular file of at most 16 GiB).
    pub fn load(path: &Path) -> Result<Self, GraphError> {
        let bytes = crate::read::read_bounded(path, MAX_WEIGHTS_FILE_BYTES, "weights files")
            .map_err(|e| GraphError::Weights(e.to_string()))?;
        Self::from_safetensors(&bytes)
            .map_err(|e| GraphError::Weights(format!("{}: {e}", path.display())))
    }
}
