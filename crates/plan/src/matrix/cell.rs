//! A cell of a matrix: one model on one engine in one configuration, and how it is named.

use super::axes::{self, KeyValue};
use super::keys::{self, CellKeys};
use super::ImageSize;
use cnnbench_engine::{Mode, Precision};
use cnnbench_results::scenario::ScenarioSpec;
use cnnbench_results::SettingsMap;

/// One cell: one model on one engine in one configuration, one result file.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// Its number, from 0: the array index of the job that runs it.
    pub index: usize,
    /// The zoo's name of the model.
    pub model: String,
    pub engine: String,
    /// The engine's own settings for this cell (`[engine_settings.ENGINE]`).
    pub settings: SettingsMap,
    /// `None`: the model's own input size.
    pub image_size: Option<ImageSize>,
    pub batch_size: usize,
    pub mode: Mode,
    pub precision: Precision,
    /// Its run settings and scenario keys: the matrix's one values and this cell's
    /// values of its lists (a scenario's keys only where its scenario takes them).
    pub keys: CellKeys,
    /// This cell's values of the run settings and scenario keys the matrix gives as
    /// lists, in cell order (empty when it gives none).
    pub listed: Vec<KeyValue>,
    /// The serving scenario the cell runs (`scenario = …`); `None`: passes back to back.
    pub scenario: Option<ScenarioSpec>,
}

impl Cell {
    /// `resnet18 on burn-flex, train, batch 16, f32` (with `224x224` when the matrix
    /// gives sizes, the run settings it gives as lists, `threads 4`, and the scenario
    /// with the values of its lists, `scenario server, qps 100`).
    pub fn describe(&self) -> String {
        let size = self.image_size.map_or(String::new(), |s| format!(" {s}"));
        let settings: String = self
            .settings
            .iter()
            .map(|(k, v)| format!(" {k}={v}"))
            .collect();
        let run_settings: String = self
            .axis_values()
            .iter()
            .map(|(key, value)| format!(", {key} {value}"))
            .collect();
        format!(
            "{}{size} on {}{settings}, {}, batch {}, {}{run_settings}",
            self.model,
            self.engine,
            self.mode,
            self.batch_size,
            self.precision.as_str()
        )
    }

    /// What sets the cell apart beside its model, engine, sizes, mode and precision:
    /// the values of the run settings the matrix lists, then its scenario (named even
    /// when it is one for every cell: it is no closed loop) and the values of the
    /// scenario keys it lists.
    pub fn axis_values(&self) -> Vec<(&'static str, String)> {
        let of_reach = |every: bool| {
            self.listed
                .iter()
                .filter(move |(key, _)| {
                    keys::find(key).is_some_and(|k| (k.reach == keys::Reach::Every) == every)
                })
                .filter(|(key, _)| *key != "scenario")
                .map(|(key, value)| (*key, axes::show(value)))
        };
        let mut values: Vec<(&'static str, String)> = of_reach(true).collect();
        if let Some(scenario) = &self.scenario {
            values.push(("scenario", scenario.kind.as_str().to_string()));
            values.extend(of_reach(false));
        }
        values
    }
}
