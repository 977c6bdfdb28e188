//! The weights an ONNX file carries, moved to the lowered graph's tensors: PyTorch's
//! layout, keyed `<node>.<tensor>`. Whatever cannot be kept faithfully (values stored
//! elsewhere and not found, another data type than FLOAT, a shape the layer does not
//! have) is left out with a note; nothing here is fatal.

use super::{Const, NodeProto, StringStringEntryProto, DATA_FLOAT};
use cnnbench_graph::{Graph, HostTensor, Weights};
use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};

/// Most bytes read from external-data files for one model (all tensors together): the
/// same bound cnnbench puts on a safetensors weights file, so a corrupt offset or length
/// cannot ask for absurd memory.
pub const MAX_EXTERNAL_DATA_BYTES: u64 = 16 << 30;

/// How an ONNX constant becomes a tensor in PyTorch's layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Layout {
    /// Already the layer's layout (Conv's W, Gemm's B with transB = 1).
    AsIs,
    /// A matrix to transpose ([in, out] → Linear's [out, in]).
    Transpose,
    /// A vector of the layer's length: `[n]`, `[1, n]`, … or one value broadcast.
    Vector,
    /// One value per channel of an N×C×H×W map: `[C]`, `[C, 1, 1]` or `[1, C, 1, 1]`.
    PerChannel,
}

/// One weight tensor of a lowered node and the ONNX value that holds it.
#[derive(Clone, Debug)]
pub(super) struct WeightUse {
    node: String,
    tensor: &'static str,
    value: String,
    layout: Layout,
}

impl WeightUse {
    pub(super) fn new(node: &str, tensor: &'static str, value: &str, layout: Layout) -> Self {
        Self {
            node: node.to_string(),
            tensor,
            value: value.to_string(),
            layout,
        }
    }

    /// The uses of `proto`'s inputs `(index, tensor, layout)` that are present.
    pub(super) fn inputs(
        node: &str,
        proto: &NodeProto,
        inputs: &[(usize, &'static str, Layout)],
    ) -> Vec<Self> {
        inputs
            .iter()
            .filter_map(|&(i, tensor, layout)| {
                proto
                    .input
                    .get(i)
                    .filter(|v| !v.is_empty())
                    .map(|v| Self::new(node, tensor, v, layout))
            })
            .collect()
    }
}

/// Notes, with the same problem of several initializers said once.
#[derive(Default)]
struct Notes {
    /// (what is wrong, the initializers it concerns), in first-seen order.
    grouped: Vec<(String, Vec<String>)>,
    single: Vec<String>,
}

impl Notes {
    fn initializer(&mut self, name: &str, problem: String) {
        match self.grouped.iter_mut().find(|(p, _)| *p == problem) {
            Some((_, names)) if names.iter().any(|n| n == name) => {}
            Some((_, names)) => names.push(name.to_string()),
            None => self.grouped.push((problem, vec![name.to_string()])),
        }
    }

    fn into_vec(self) -> Vec<String> {
        let mut out: Vec<String> = self
            .grouped
            .into_iter()
            .map(|(problem, names)| match names.as_slice() {
                [one] => format!("initializer \"{one}\": {problem}"),
                _ => {
                    let shown: Vec<String> =
                        names.iter().take(3).map(|n| format!("\"{n}\"")).collect();
                    format!(
                        "{} initializers ({}{}): {problem}",
                        names.len(),
                        shown.join(", "),
                        if names.len() > shown.len() {
                            ", …"
                        } else {
                            ""
                        },
                    )
                }
            })
            .collect();
        out.extend(self.single);
        out
    }
}

/// Reads every used constant's values and arranges them for its layer. The values move
/// out of `consts` (copied only for a constant that feeds several layers), so a large
/// model's weights are not held twice.
pub(super) fn collect(
    graph: &Graph,
    uses: &[WeightUse],
    mut consts: HashMap<String, Const>,
    external_dir: Option<&Path>,
) -> (Weights, Vec<String>) {
    let specs: HashMap<String, Vec<usize>> = graph
        .weight_specs()
        .into_iter()
        .map(|s| (s.key, s.shape))
        .collect();
    let mut weights = Weights::new();
    let mut notes = Notes::default();
    let mut budget = MAX_EXTERNAL_DATA_BYTES;
    // Values are read once even when several layers share them, and given up with the
    // last use.
    let mut read: HashMap<&str, Result<Values, String>> = HashMap::new();
    let mut left: HashMap<&str, usize> = HashMap::new();
    for u in uses {
        *left.entry(u.value.as_str()).or_default() += 1;
    }
    for u in uses {
        let last = left.get_mut(u.value.as_str()).is_some_and(|n| {
            *n -= 1;
            *n == 0
        });
        let key = format!("{}.{}", u.node, u.tensor);
        let Some(want) = specs.get(&key) else {
            notes.single.push(format!(
                "node \"{}\" has no tensor \"{}\" for \"{}\": not kept",
                u.node, u.tensor, u.value
            ));
            continue;
        };
        if !read.contains_key(u.value.as_str()) {
            let Some(c) = consts.get_mut(&u.value) else {
                notes.single.push(format!(
                    "node \"{}\": its {} \"{}\" is computed in the graph, not a constant: not kept",
                    u.node, u.tensor, u.value
                ));
                continue;
            };
            let v = values(c, external_dir, &mut budget);
            read.insert(u.value.as_str(), v);
        }
        let values = if last {
            read.remove(u.value.as_str())
        } else {
            read.get(u.value.as_str()).cloned()
        };
        let (dims, data) = match values {
            Some(Ok(v)) => v,
            Some(Err(problem)) => {
                notes.initializer(&u.value, problem);
                continue;
            }
            None => continue,
        };
        match arrange(u.layout, &dims, data, want) {
            Some(tensor) => weights.insert(key, tensor),
            None => notes.single.push(format!(
                "node \"{}\": {} \"{}\" has shape {dims:?}, which does not fit the layer's {want:?}{}: not kept",
                u.node,
                u.tensor,
                u.value,
                if u.layout == Layout::Transpose {
                    " once transposed"
                } else {
                    ""
                }
            )),
        }
    }
    (weights, notes.into_vec())
}

/// Dims as sizes and their product, or why they are not usable.
fn sizes(dims: &[i64]) -> Result<(Vec<usize>, usize), String> {
    let sizes: Vec<usize> = dims
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<Result<_, _>>()
        .map_err(|_| format!("negative dimension in {dims:?}: not kept"))?;
    let elements = sizes
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| format!("implausible shape {dims:?}: not kept"))?;
    Ok((sizes, elements))
}

/// A constant's shape and float values.
type Values = (Vec<usize>, Vec<f32>);

/// The constant's float values (moved out of it) with its shape, or the note's problem.
fn values(c: &mut Const, external_dir: Option<&Path>, budget: &mut u64) -> Result<Values, String> {
    if let Some(problem) = &c.unreadable {
        return Err(problem.clone());
    }
    if c.data_type != DATA_FLOAT {
        return Err(format!(
            "{} (data type {}): only FLOAT (32-bit) weights are kept",
            data_type_name(c.data_type),
            c.data_type
        ));
    }
    let (dims, elements) = sizes(&c.dims)?;
    if let Some(entries) = &c.external {
        let data = read_external(entries, external_dir, elements, budget)?;
        return Ok((dims, data));
    }
    if c.floats.len() != elements {
        return Err(if c.floats.is_empty() && elements > 0 {
            "no values stored: shapes only".to_string()
        } else {
            format!(
                "{} values stored, but the shape {:?} needs {elements}: not kept",
                c.floats.len(),
                c.dims
            )
        });
    }
    Ok((dims, std::mem::take(&mut c.floats)))
}

fn data_type_name(t: i32) -> &'static str {
    match t {
        2 => "UINT8",
        3 => "INT8",
        4 => "UINT16",
        5 => "INT16",
        6 => "INT32",
        7 => "INT64",
        8 => "STRING",
        9 => "BOOL",
        10 => "FLOAT16",
        11 => "DOUBLE",
        12 => "UINT32",
        13 => "UINT64",
        16 => "BFLOAT16",
        _ => "another type",
    }
}

/// Reads `elements` little-endian f32 values from the external file the entries name.
fn read_external(
    entries: &[StringStringEntryProto],
    external_dir: Option<&Path>,
    elements: usize,
    budget: &mut u64,
) -> Result<Vec<f32>, String> {
    let entry = |key: &str| {
        entries
            .iter()
            .find(|e| e.key == key)
            .map(|e| e.value.as_str())
    };
    let Some(location) = entry("location") else {
        return Err("stored externally, without a file name: shapes only".to_string());
    };
    let number = |key: &str| -> Result<Option<u64>, String> {
        entry(key)
            .map(|v| {
                v.trim()
                    .parse::<u64>()
                    .map_err(|_| format!("external {key} \"{v}\" is not a number: shapes only"))
            })
            .transpose()
    };
    let offset = number("offset")?.unwrap_or(0);
    let needed = (elements as u64)
        .checked_mul(4)
        .ok_or_else(|| "implausible size: not kept".to_string())?;
    if let Some(length) = number("length")? {
        if length != needed {
            return Err(format!(
                "external length {length} bytes, but the shape needs {needed}: not kept"
            ));
        }
    }
    let Some(dir) = external_dir else {
        return Err(format!(
            "in external file \"{location}\", which is not read when the model is given as bytes: shapes only"
        ));
    };
    let relative = Path::new(location);
    if !relative
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(format!(
            "in external file \"{location}\", outside the model's folder: not read, shapes only"
        ));
    }
    let path: PathBuf = dir.join(relative);
    // The name stays inside the folder, but a link on the way may lead out of it (to
    // `/etc/shadow`, to another user's files): the real path must be inside the real folder.
    if let (Ok(real), Ok(real_dir)) = (path.canonicalize(), dir.canonicalize()) {
        if !real.starts_with(&real_dir) {
            return Err(format!(
                "in external file \"{location}\", a link that leads outside the model's folder (to {}): not read, shapes only",
                real.display()
            ));
        }
    }
    let size = match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => m.len(),
        Ok(_) => {
            return Err(format!(
                "in external file \"{}\", which is not a file: shapes only",
                path.display()
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "in external file \"{}\", which is missing: shapes only",
                path.display()
            ))
        }
        Err(e) => {
            return Err(format!(
                "in external file \"{}\", which cannot be read ({e}): shapes only",
                path.display()
            ))
        }
    };
    let end = offset.checked_add(needed).filter(|&end| end <= size);
    if end.is_none() {
        return Err(format!(
            "at bytes {offset}..{} of external file \"{}\", which has only {size} bytes: shapes only",
            offset.saturating_add(needed),
            path.display()
        ));
    }
    if needed > *budget {
        return Err(format!(
            "in external file \"{}\", past the {} GiB of external data cnnbench reads: shapes only",
            path.display(),
            MAX_EXTERNAL_DATA_BYTES >> 30
        ));
    }
    let mut bytes = vec![0u8; needed as usize];
    std::fs::File::open(&path)
        .and_then(|mut f| {
            f.seek(SeekFrom::Start(offset))?;
            f.read_exact(&mut bytes)
        })
        .map_err(|e| {
            format!(
                "in external file \"{}\", which cannot be read ({e}): shapes only",
                path.display()
            )
        })?;
    *budget -= needed;
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

/// The values in the layer's layout, or `None` when they do not fit `want`.
fn arrange(layout: Layout, dims: &[usize], data: Vec<f32>, want: &[usize]) -> Option<HostTensor> {
    let tensor = |data: Vec<f32>| HostTensor::new(want.to_vec(), data).ok();
    match layout {
        Layout::AsIs => (dims == want).then(|| tensor(data)).flatten(),
        Layout::Transpose => {
            let [rows, cols] = dims else {
                return None;
            };
            if [*cols, *rows] != want || rows.checked_mul(*cols) != Some(data.len()) {
                return None;
            }
            let mut out = Vec::with_capacity(data.len());
            for c in 0..*cols {
                out.extend((0..*rows).map(|r| data[r * cols + c]));
            }
            tensor(out)
        }
        Layout::PerChannel => {
            let [n] = want else {
                return None;
            };
            let fits = matches!(dims, [c] | [c, 1, 1] | [1, c, 1, 1] if c == n);
            (fits && data.len() == *n).then(|| tensor(data)).flatten()
        }
        Layout::Vector => {
            let [n] = want else {
                return None;
            };
            // `[n]`, `[1, n]`, …: the values run along the last axis, as the layer's do.
            let along_last =
                dims.last() == Some(n) && dims[..dims.len() - 1].iter().all(|&d| d == 1);
            if data.len() == *n && along_last {
                tensor(data)
            } else if data.len() == 1 {
                // One value broadcast over the layer (ONNX broadcasting).
                tensor(vec![data[0]; *n])
            } else {
                None
            }
        }
    }
}
