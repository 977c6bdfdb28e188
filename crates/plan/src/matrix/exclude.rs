//! `[[exclude]]`: the cells matching every key an entry gives are dropped. Each value it
//! names must be one of the matrix's lists, so that a typo excludes nothing silently.

use super::axes::{typed, KeyAxes, KeyValue};
use super::engine_settings::{SettingScalar, SettingValues};
use super::{keys, Cell, ImageSize, ImageSizeSpec, MatrixError, MatrixFile};
use cnnbench_engine::{Mode, Precision};
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// The keys of an entry that name the matrix's own lists (the run settings and
/// scenario keys are read as [`keys::CellKeys`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExcludeEntry {
    model: Option<String>,
    engine: Option<String>,
    /// Values of the engine's own settings its `[engine_settings]` gives as lists.
    engine_settings: Option<BTreeMap<String, SettingScalar>>,
    batch_size: Option<usize>,
    image_size: Option<ImageSizeSpec>,
    mode: Option<Mode>,
    precision: Option<Precision>,
}

/// An exclude entry checked against the axes: each value it names is one of theirs.
pub(super) struct Exclusion {
    model: Option<String>,
    engine: Option<String>,
    /// Values of the engine's setting axes: a cell of the engine with every one matches.
    engine_settings: Vec<(String, String)>,
    batch_size: Option<usize>,
    image_size: Option<ImageSize>,
    mode: Option<Mode>,
    precision: Option<Precision>,
    /// Values of the lists of run settings and scenario keys: a cell with every one
    /// of them matches.
    keys: Vec<KeyValue>,
}

/// The matrix's axes an exclusion is checked against, beside the file's own lists.
pub(super) struct Axes<'a> {
    pub image_sizes: &'a [Option<ImageSize>],
    pub batch_sizes: &'a [usize],
    pub keys: &'a KeyAxes,
}

impl Exclusion {
    /// Entry `index` (from 1) as written, checked against the matrix.
    pub fn read(
        index: usize,
        text: &str,
        entry: &Spanned<DeValue>,
        file: &MatrixFile,
        axes: Axes,
    ) -> Result<Exclusion, MatrixError> {
        let refuse = |message: String| MatrixError::Exclude { index, message };
        let DeValue::Table(table) = entry.get_ref() else {
            return Err(refuse(
                "it is not a table: write each as `[[exclude]]` with its keys below".into(),
            ));
        };
        let mut own = DeTable::new();
        let mut named = Vec::new();
        for (name, value) in table.iter() {
            match keys::find(name.get_ref()) {
                Some(key) => named.push((key.name, typed(text, name, value)?)),
                None => {
                    own.insert(name.clone(), value.clone());
                }
            }
        }
        let e = ExcludeEntry::deserialize(serde::de::IntoDeserializer::into_deserializer(
            Spanned::new(entry.span(), own),
        ))
        .map_err(|mut e| {
            e.set_input(Some(text));
            MatrixError::Toml(e)
        })?;
        let not_in = |key: &str, value: String, axis: &str| {
            refuse(format!(
                "{key} {value} is not in `{axis}`, so it would exclude nothing"
            ))
        };
        let model = match &e.model {
            None => None,
            Some(name) => {
                let canonical = cnnbench_zoo::find(name)
                    .map(|m| m.name.to_string())
                    .filter(|c| {
                        file.models
                            .iter()
                            .any(|m| cnnbench_zoo::find(m).is_some_and(|f| f.name == c))
                    })
                    .ok_or_else(|| not_in("model", format!("\"{name}\""), "models"))?;
                Some(canonical)
            }
        };
        if let Some(engine) = &e.engine {
            if !file.engines.contains(engine) {
                return Err(not_in("engine", format!("\"{engine}\""), "engines"));
            }
        }
        let mut engine_settings = Vec::new();
        for (key, value) in e.engine_settings.iter().flatten() {
            let value = value.text();
            let Some(engine) = &e.engine else {
                return Err(refuse(format!(
                    "engine_settings {key} = {value} names no engine: an engine's settings are its own, so give `engine` too"
                )));
            };
            match file.engine_settings.get(engine).and_then(|s| s.get(key)) {
                Some(SettingValues::Axis(values)) if values.iter().any(|v| v.text() == value) => {}
                Some(SettingValues::Axis(_)) => {
                    return Err(not_in(
                        &format!("engine_settings {key}"),
                        value,
                        &format!("engine_settings.{engine}.{key}"),
                    ))
                }
                Some(SettingValues::One(_)) | None => {
                    return Err(refuse(format!(
                        "`engine_settings.{engine}.{key}` is not a list in the matrix, so it is no axis to exclude from"
                    )))
                }
            }
            engine_settings.push((key.clone(), value));
        }
        if let Some(b) = e.batch_size {
            if !axes.batch_sizes.contains(&b) {
                return Err(not_in("batch_size", b.to_string(), "batch_sizes"));
            }
        }
        let image_size = match &e.image_size {
            None => None,
            Some(spec) => {
                let size = spec.resolve("exclude.image_size")?;
                if !axes.image_sizes.contains(&Some(size)) {
                    return Err(not_in("image_size", size.to_string(), "image_sizes"));
                }
                Some(size)
            }
        };
        if let Some(m) = e.mode {
            if !file.modes.contains(&m) {
                return Err(not_in("mode", m.to_string(), "modes"));
            }
        }
        if let Some(p) = e.precision {
            if !file.precisions.contains(&p) {
                return Err(not_in("precision", p.as_str().to_string(), "precisions"));
            }
        }
        for value in &named {
            axes.keys.check_on_axis(value).map_err(refuse)?;
        }
        let exclusion = Exclusion {
            model,
            engine: e.engine.clone(),
            engine_settings,
            batch_size: e.batch_size,
            image_size,
            mode: e.mode,
            precision: e.precision,
            keys: named,
        };
        if exclusion.model.is_none()
            && exclusion.engine.is_none()
            && exclusion.batch_size.is_none()
            && exclusion.image_size.is_none()
            && exclusion.mode.is_none()
            && exclusion.precision.is_none()
            && exclusion.keys.is_empty()
        {
            return Err(refuse(
                "it names no key, so it would exclude every cell; give model, engine, batch_size, image_size, mode, precision, or a run setting or scenario key the matrix lists".into(),
            ));
        }
        Ok(exclusion)
    }

    pub fn matches(&self, c: &Cell) -> bool {
        self.model.as_ref().is_none_or(|m| *m == c.model)
            && self.engine.as_ref().is_none_or(|e| *e == c.engine)
            && self
                .engine_settings
                .iter()
                .all(|(key, value)| c.settings.get(key) == Some(value))
            && self.batch_size.is_none_or(|b| b == c.batch_size)
            && self.image_size.is_none_or(|s| Some(s) == c.image_size)
            && self.mode.is_none_or(|m| m == c.mode)
            && self.precision.is_none_or(|p| p == c.precision)
            && self.keys.iter().all(|kv| c.listed.contains(kv))
    }
}
