//! A matrix as a value, to be written as a file: `cnnbench choose` writes its candidates
//! so. It is serialised, never pieced together as text, so that no name or value (an
//! engine setting holding a quote, a model path holding a newline) can leave its place
//! in the file; what it writes, [`Matrix::parse`](super::Matrix::parse) reads back.

use super::{CellKeys, MATRIX_FORMAT, MATRIX_VERSION};
use cnnbench_engine::{Mode, Precision};
use cnnbench_results::SettingsMap;
use serde::Serialize;
use std::collections::BTreeMap;

/// The keys of a matrix file, each as the file writes it.
#[derive(Clone, Debug, Serialize)]
pub struct MatrixDraft {
    format: &'static str,
    version: u32,
    pub models: Vec<String>,
    /// `HxW` or `N`; `None`: each model's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_sizes: Option<Vec<String>>,
    pub engines: Vec<String>,
    pub modes: Vec<Mode>,
    pub precisions: Vec<Precision>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_sizes: Option<Vec<usize>>,
    /// The run settings and scenario keys, one value each for every cell.
    #[serde(flatten)]
    pub keys: CellKeys,
    /// Per engine, its own settings as lists: axes of its cells.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub engine_settings: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<ExcludeDraft>,
}

/// An `[[exclude]]` entry: an engine's cells at a precision, or only those with these
/// values of its setting lists.
#[derive(Clone, Debug, Serialize)]
pub struct ExcludeDraft {
    pub engine: String,
    pub precision: Precision,
    #[serde(skip_serializing_if = "SettingsMap::is_empty")]
    pub engine_settings: SettingsMap,
}

impl MatrixDraft {
    /// A matrix of these models on these engines, in inference at f32, with
    /// `cnnbench run`'s defaults for the rest.
    pub fn new(models: Vec<String>, engines: Vec<String>) -> MatrixDraft {
        MatrixDraft {
            format: MATRIX_FORMAT,
            version: MATRIX_VERSION,
            models,
            image_sizes: None,
            engines,
            modes: vec![Mode::Infer],
            precisions: vec![Precision::F32],
            batch_sizes: None,
            keys: CellKeys::default(),
            engine_settings: BTreeMap::new(),
            exclude: Vec::new(),
        }
    }

    /// The file's text, after a comment: each of its lines is a comment line whatever
    /// it holds.
    pub fn to_toml(&self, comment: &str) -> Result<String, toml::ser::Error> {
        let mut text: String = comment
            .lines()
            .map(|line| format!("# {}\n", line.escape_default()))
            .collect();
        text.push_str(&toml::to_string(self)?);
        Ok(text)
    }
}
