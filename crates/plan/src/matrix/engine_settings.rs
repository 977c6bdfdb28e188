//! `[engine_settings.ENGINE]`: an engine's own settings, each one value for its cells or a
//! list, an axis of them. Only the engine's provider knows its keys (`cnnbench engines`).

use super::MatrixError;
use cnnbench_results::SettingsMap;
use serde::Deserialize;
use std::collections::BTreeMap;

/// An engine setting in a matrix: one value for every cell of the engine, or a list of
/// values, an axis.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum SettingValues {
    One(SettingScalar),
    Axis(Vec<SettingScalar>),
}

/// A value as TOML writes it, taken as the text the engine parses (`4`, `true`,
/// `"throughput"`).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum SettingScalar {
    Text(String),
    Whole(i64),
    Switch(bool),
    Number(f64),
}

impl SettingScalar {
    pub fn text(&self) -> String {
        match self {
            SettingScalar::Text(t) => t.clone(),
            SettingScalar::Whole(n) => n.to_string(),
            SettingScalar::Switch(b) => b.to_string(),
            SettingScalar::Number(x) => x.to_string(),
        }
    }
}

/// Every combination of an engine's settings in a matrix, in cell order: its keys
/// alphabetically, each axis's values as written (the last key varies fastest).
pub(super) fn setting_combinations(
    engine: &str,
    given: &BTreeMap<String, SettingValues>,
) -> Result<Vec<SettingsMap>, MatrixError> {
    let mut combinations = vec![SettingsMap::new()];
    for (key, values) in given {
        let values: Vec<String> = match values {
            SettingValues::One(v) => vec![v.text()],
            SettingValues::Axis(list) => list.iter().map(SettingScalar::text).collect(),
        };
        let bad = |message: String| MatrixError::EngineSetting {
            engine: engine.to_string(),
            message,
        };
        if values.is_empty() {
            return Err(bad(format!(
                "`{key}` is an empty list: the matrix would have no cells of {engine}"
            )));
        }
        if let Some(i) = (1..values.len()).find(|&i| values[..i].contains(&values[i])) {
            return Err(bad(format!("`{key}` lists {} twice", values[i])));
        }
        combinations = combinations
            .into_iter()
            .flat_map(|base| {
                values.iter().map(move |v| {
                    let mut next = base.clone();
                    next.insert(key.clone(), v.clone());
                    next
                })
            })
            .collect();
    }
    Ok(combinations)
}
