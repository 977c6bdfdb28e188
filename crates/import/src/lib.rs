//! Converters from other model formats (Caffe prototxt, ONNX) to the Graph IR, and [`load_model`], which picks
//! the format of a model file by its extension and content, so that every command that
//! takes a model file accepts all of them. [`load_model_with_weights`] also keeps the
//! weights the file carries (ONNX initializers; model JSON and Caffe prototxt carry none).

pub mod caffe;
pub mod onnx;
pub mod text_format;

use cnnbench_graph::{Graph, GraphError, ReadFileError, ReadProblem, Weights};
use std::path::Path;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ImportError {
    #[error("line {line}: {message}")]
    Syntax { line: usize, message: String },
    #[error("layer \"{layer}\" ({kind}): {message}")]
    Layer {
        layer: String,
        kind: String,
        message: String,
    },
    #[error("{0}")]
    Unsupported(String),
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// The operating system's error (missing file, no permission); the message names
    /// the file and holds the OS error (not also a `source`, so it is said once).
    #[error("cannot read {path}: {error}")]
    Io { path: String, error: std::io::Error },
    /// A file that is no model file whatever its contents (a device, a pipe, too large);
    /// the message names the file.
    #[error("{0}")]
    File(ReadFileError),
}

impl ImportError {
    /// Whether the message already names the file, so a caller adds no second mention.
    pub fn names_the_file(&self) -> bool {
        matches!(self, ImportError::Io { .. } | ImportError::File(_))
    }
}

/// The formats a model file can be in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelFormat {
    /// cnnbench's own model JSON.
    CnnbenchJson,
    /// A Caffe deploy prototxt.
    CaffePrototxt,
    /// An ONNX model (binary protobuf).
    Onnx,
}

/// Decides the format from the extension, falling back to the content.
pub fn detect_format(path: &Path, bytes: &[u8]) -> Result<ModelFormat, ImportError> {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let text_start = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).to_string();
    let looks_json =
        text_start.trim_start().starts_with('{') && text_start.contains("cnnbench-model");
    let looks_caffe = !looks_json
        && (text_start.contains("layer") || text_start.contains("input_dim"))
        && std::str::from_utf8(bytes).is_ok();
    match ext.as_str() {
        "json" if looks_json || text_start.trim_start().starts_with('{') => {
            Ok(ModelFormat::CnnbenchJson)
        }
        "prototxt" | "pbtxt" if !looks_json => Ok(ModelFormat::CaffePrototxt),
        "onnx" => Ok(ModelFormat::Onnx),
        "json" | "prototxt" | "pbtxt" => Err(ImportError::Unsupported(format!(
            "{} has the extension .{ext} but does not look like one: expected {}",
            path.display(),
            if ext == "json" {
                "a cnnbench model JSON (\"format\": \"cnnbench-model\")"
            } else {
                "a Caffe prototxt (layer { … })"
            }
        ))),
        _ if looks_json => Ok(ModelFormat::CnnbenchJson),
        _ if looks_caffe => Ok(ModelFormat::CaffePrototxt),
        _ => Err(ImportError::Unsupported(format!(
            "cannot tell the format of {}: expected a cnnbench model .json or a Caffe .prototxt",
            path.display()
        ))),
    }
}

/// A model file's network with the weights it carries.
#[derive(Clone, Debug)]
pub struct Imported {
    pub graph: Graph,
    /// The weights kept from the file, in PyTorch's layout keyed `<node>.<tensor>`: all
    /// of the network's, some of them (see `notes`) or none. They always fit `graph`.
    pub weights: Weights,
    /// What could not be kept and why, one sentence each (e.g. an external-data file
    /// that is missing); never an error, since the shapes are there regardless.
    pub notes: Vec<String>,
}

impl Imported {
    /// Whether `weights` holds every tensor of the network.
    pub fn weights_complete(&self) -> bool {
        self.weights.check(&self.graph, true).is_ok()
    }
}

/// Reads a model file in any supported format: the network only (weight values are not
/// read, external-data files not opened).
pub fn load_model(path: &Path) -> Result<Graph, ImportError> {
    load(path, false).map(|imported| imported.graph)
}

/// Reads a model file in any supported format, keeping the weights it carries. An ONNX
/// file's external data is read from the file's folder; what cannot be kept is said in
/// [`Imported::notes`] and is not an error.
pub fn load_model_with_weights(path: &Path) -> Result<Imported, ImportError> {
    load(path, true)
}

/// Reads a model file whole, refusing (before reading) what is not a regular file and
/// what is larger than its format allows: [`onnx::MAX_MODEL_BYTES`] for `.onnx` (ONNX's
/// protobuf cannot be larger), [`text_format::MAX_TEXT_BYTES`] for the text formats,
/// which are all the others (the format is told from the content only between model
/// JSON and prototxt).
pub fn read_model_file(path: &Path) -> Result<Vec<u8>, ImportError> {
    let onnx = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("onnx"));
    let (limit, what) = if onnx {
        (onnx::MAX_MODEL_BYTES as u64, "ONNX files")
    } else {
        (
            text_format::MAX_TEXT_BYTES as u64,
            "model JSON and prototxt files",
        )
    };
    cnnbench_graph::read_bounded(path, limit, what).map_err(|e| match e.problem {
        ReadProblem::Io(error) => ImportError::Io {
            path: path.display().to_string(),
            error,
        },
        // Whatever the extension, a device or a pipe is no model file.
        ReadProblem::NotRegular { kind, .. } => ImportError::File(ReadFileError {
            path: e.path,
            problem: ReadProblem::NotRegular {
                kind,
                what: "model files".into(),
            },
        }),
        problem => ImportError::File(ReadFileError {
            path: e.path,
            problem,
        }),
    })
}

fn load(path: &Path, keep_weights: bool) -> Result<Imported, ImportError> {
    let bytes = read_model_file(path)?;
    let text = || {
        String::from_utf8(bytes.clone())
            .map_err(|_| ImportError::Unsupported("not UTF-8 text".into()))
    };
    let graph_only = |graph: Graph| Imported {
        graph,
        weights: Weights::new(),
        notes: Vec::new(),
    };
    match detect_format(path, &bytes)? {
        ModelFormat::CnnbenchJson => Ok(graph_only(Graph::from_json(&text()?)?)),
        ModelFormat::CaffePrototxt => Ok(graph_only(caffe::from_prototxt(&text()?)?)),
        ModelFormat::Onnx => {
            let stem = path.file_stem().map_or_else(
                || "onnx-model".to_string(),
                |s| s.to_string_lossy().to_string(),
            );
            if keep_weights {
                // External data lives beside the model (the parent of a bare name is "",
                // the current folder).
                let dir = path.parent().unwrap_or(Path::new(""));
                onnx::from_onnx_with_weights(&bytes, &stem, Some(dir))
            } else {
                onnx::from_onnx(&bytes, &stem).map(graph_only)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn model_files_of_the_wrong_kind_or_size_are_refused_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        // Sparse files: no disk used, and reading either would take gigabytes.
        let onnx = dir.path().join("zeros.onnx");
        std::fs::File::create(&onnx)
            .unwrap()
            .set_len(3 << 30)
            .unwrap();
        let json = dir.path().join("huge.json");
        std::fs::File::create(&json)
            .unwrap()
            .set_len(100 << 20)
            .unwrap();
        let start = Instant::now();
        let e = load_model(&onnx).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{} is 3.0 GiB; ONNX files above 2 GiB are refused (is it the right file?)",
                onnx.display()
            )
        );
        let e = load_model_with_weights(&json).unwrap_err().to_string();
        assert!(
            e.contains("is 100.0 MiB; model JSON and prototxt files above 64 MiB are refused"),
            "{e}"
        );
        assert!(start.elapsed() < Duration::from_secs(1));
        let e = load_model(Path::new("/dev/zero")).unwrap_err().to_string();
        assert_eq!(
            e,
            "/dev/zero is a character device, not a regular file; cnnbench reads model files only from regular files on disk"
        );
        let e = load_model(&dir.path().join("none.onnx")).unwrap_err();
        assert!(matches!(e, ImportError::Io { .. }), "{e}");
    }
}
