//! The keys of a cell a matrix gives, split generically: each is one value (every cell's)
//! or a list (an axis of the cells), and every value is read through [`CellKeys`] where
//! it stands, so that a wrong type is refused naming its line and values compare as
//! what they mean. No key is named here: [`keys::KEYS`] says which cells each reaches.

use super::keys::{self, CellKeys, Key, Reach};
use super::{check_axis, MatrixError};
use cnnbench_results::scenario::{ScenarioKind, ScenarioSpec};
use serde::Deserialize;
use serde_json::{Map, Value};
use toml::de::{DeString, DeTable, DeValue};
use toml::Spanned;

/// A key and one of its values as `CellKeys` holds it (JSON, so that `5` and `5.0` are
/// one `qps` and a seed may be any `u64`).
pub type KeyValue = (&'static str, Value);

/// One key as the file gives it.
pub(super) struct Given {
    pub key: &'static Key,
    pub values: Vec<Value>,
    /// A list, an axis of the cells; else one value for every cell it reaches.
    pub is_axis: bool,
}

/// The cell keys of a matrix (or of an `[[exclude]]` entry), in [`keys::KEYS`] order.
pub(super) struct KeyAxes {
    pub given: Vec<Given>,
}

/// One cell's part of them: its keys (the one values and its lists' values, each only
/// where the cell's scenario takes it) and the values of the lists, in cell order.
pub(super) struct CellValues {
    pub keys: CellKeys,
    /// The scenario its keys make (`None`: passes back to back).
    pub scenario: Option<ScenarioSpec>,
    pub listed: Vec<KeyValue>,
}

/// Reads one value of a key through [`CellKeys`], as the file's own line.
pub(super) fn typed(
    text: &str,
    name: &Spanned<DeString>,
    value: &Spanned<DeValue>,
) -> Result<Value, MatrixError> {
    let mut table = DeTable::new();
    table.insert(name.clone(), value.clone());
    let span = value.span();
    let read = CellKeys::deserialize(serde::de::IntoDeserializer::into_deserializer(
        Spanned::new(span, table),
    ));
    let keys = read.map_err(|mut e| {
        e.set_input(Some(text));
        MatrixError::Toml(e)
    })?;
    let key: &str = name.get_ref();
    // serde_json holds no NaN or infinity (they become null): no setting takes one.
    match serde_json::to_value(keys) {
        Ok(Value::Object(mut map)) => match map.remove(key) {
            Some(Value::Null) | None => Err(MatrixError::BadValue {
                key: keys::find(key).map_or("value", |k| k.name),
                message: "nan and inf are no values a run takes".into(),
            }),
            Some(v) => Ok(v),
        },
        Ok(_) | Err(_) => Err(MatrixError::BadValue {
            key: keys::find(key).map_or("value", |k| k.name),
            message: "its value could not be held".into(),
        }),
    }
}

/// A value as a cell names it: `10`, `20.5`, `server`, `true`.
pub fn show(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) if n.is_f64() => n.as_f64().map_or(n.to_string(), |x| x.to_string()),
        other => other.to_string(),
    }
}

impl KeyAxes {
    /// The keys among `entries` that a cell takes (the caller leaves the others to the
    /// file's own keys), each value typed; a list must name something, nothing twice.
    pub fn read<'a, 'i: 'a>(
        text: &str,
        entries: impl IntoIterator<Item = (&'a Spanned<DeString<'i>>, &'a Spanned<DeValue<'i>>)>,
    ) -> Result<KeyAxes, MatrixError> {
        let mut given = Vec::new();
        for (name, value) in entries {
            let Some(key) = keys::find(name.get_ref()) else {
                continue;
            };
            let (values, is_axis) = match value.get_ref() {
                DeValue::Array(items) => {
                    let values = items
                        .iter()
                        .map(|item| typed(text, name, item))
                        .collect::<Result<Vec<_>, _>>()?;
                    check_axis(key.name, &values, show)?;
                    (values, true)
                }
                DeValue::String(_)
                | DeValue::Integer(_)
                | DeValue::Float(_)
                | DeValue::Boolean(_)
                | DeValue::Datetime(_)
                | DeValue::Table(_) => (vec![typed(text, name, value)?], false),
            };
            given.push(Given {
                key,
                values,
                is_axis,
            });
        }
        given.sort_by_key(|g| keys::KEYS.iter().position(|k| k.name == g.key.name));
        Ok(KeyAxes { given })
    }

    fn get(&self, name: &str) -> Option<&Given> {
        self.given.iter().find(|g| g.key.name == name)
    }

    /// The scenarios the cells run, in the order written; `[None]` without one.
    pub fn kinds(&self) -> Vec<Option<ScenarioKind>> {
        match self.get("scenario") {
            None => vec![None],
            Some(g) => g
                .values
                .iter()
                .map(|v| v.as_str().and_then(|name| name.parse().ok()))
                .collect(),
        }
    }

    /// A key of a scenario reaches a cell of the matrix, or is refused naming it.
    pub fn check_reach(&self) -> Result<(), MatrixError> {
        let kinds = self.kinds();
        let listed: Vec<&str> = kinds.iter().flatten().map(|k| k.as_str()).collect();
        for g in &self.given {
            if kinds.iter().any(|k| g.key.reaches(*k)) {
                continue;
            }
            let message = if listed.is_empty() {
                format!("it is a setting of a serving scenario, and the matrix gives no `scenario`: add one (`scenario = \"server\"`: {}), or leave the key out", ScenarioKind::names().join(", "))
            } else {
                let takers = g.key.takers();
                format!(
                    "it is a setting of the {takers} scenario{}, and the matrix's `scenario` is {}: it would reach no cell",
                    if takers.contains(" and ") { "s" } else { "" },
                    listed.join(", ")
                )
            };
            return Err(MatrixError::BadValue {
                key: g.key.name,
                message,
            });
        }
        Ok(())
    }

    /// The lists that vary the cells of a scenario (`None`: passes back to back), the
    /// scenario's own list excepted.
    fn lists_of(&self, kind: Option<ScenarioKind>) -> impl Iterator<Item = &Given> {
        self.given
            .iter()
            .filter(move |g| g.is_axis && g.key.reach != Reach::Scenario && g.key.reaches(kind))
    }

    /// How many cells' worth of key values there are, counted before they are made.
    pub fn count(&self) -> u128 {
        self.kinds()
            .into_iter()
            .map(|kind| {
                self.lists_of(kind)
                    .map(|g| g.values.len() as u128)
                    .product::<u128>()
            })
            .sum()
    }

    /// What every cell shares: the one values of the run settings (the scenario's keys
    /// are each scenario's).
    pub fn base(&self) -> Result<CellKeys, MatrixError> {
        let one: Map<String, Value> = self
            .given
            .iter()
            .filter(|g| !g.is_axis && g.key.reach == Reach::Every)
            .map(|g| (g.key.name.to_string(), g.values[0].clone()))
            .collect();
        from_values(one)
    }

    /// Each cell's key values, in cell order: the run settings' lists, then each
    /// scenario in the order written with the lists of the keys it takes (the last
    /// varies fastest). A file without lists has one, so that its cells number as before.
    pub fn cells(&self) -> Result<Vec<CellValues>, MatrixError> {
        let kind_is_axis = self.get("scenario").is_some_and(|g| g.is_axis);
        // Each scenario's values, made once: the one values it takes and each
        // combination of its lists (led by its own value where `scenario` is a list).
        let mut scenarios = Vec::new();
        for kind in self.kinds() {
            let head = match kind {
                Some(k) if kind_is_axis => vec![("scenario", Value::from(k.as_str()))],
                Some(_) | None => Vec::new(),
            };
            let one: Map<String, Value> = self
                .given
                .iter()
                .filter(|g| !g.is_axis && g.key.reaches(kind))
                .map(|g| (g.key.name.to_string(), g.values[0].clone()))
                .collect();
            let lists = product(self.lists_of(kind).filter(|g| g.key.reach != Reach::Every));
            scenarios.push((head, one, lists));
        }
        let mut out = Vec::new();
        // Passes back to back take only the run settings' lists.
        for run in product(self.lists_of(None)) {
            for (head, one, lists) in &scenarios {
                for rest in lists {
                    let listed: Vec<KeyValue> =
                        run.iter().chain(head).chain(rest).cloned().collect();
                    let mut values = one.clone();
                    values.extend(listed.iter().map(|(k, v)| (k.to_string(), v.clone())));
                    let keys = from_values(values)?;
                    out.push(CellValues {
                        scenario: keys.scenario_spec(),
                        keys,
                        listed,
                    });
                }
            }
        }
        Ok(out)
    }

    /// Whether a key's value is one of a list of the matrix, as an `[[exclude]]` entry
    /// must name; else why not.
    pub fn check_on_axis(&self, (name, value): &KeyValue) -> Result<(), String> {
        match self.get(name) {
            Some(g) if g.is_axis && g.values.contains(value) => Ok(()),
            Some(g) if g.is_axis => Err(format!(
                "{name} {} is not in `{name}`, so it would exclude nothing",
                show(value)
            )),
            Some(_) | None => Err(format!(
                "`{name}` is not a list in the matrix, so it is no axis to exclude from"
            )),
        }
    }
}

/// A cell's keys from values each read through `CellKeys` already.
fn from_values(values: Map<String, Value>) -> Result<CellKeys, MatrixError> {
    serde_json::from_value(Value::Object(values)).map_err(|e| MatrixError::BadValue {
        key: "the cell's keys",
        message: e.to_string(),
    })
}

/// Every combination of the lists' values, in order (the last varies fastest).
fn product<'a>(lists: impl Iterator<Item = &'a Given>) -> Vec<Vec<KeyValue>> {
    let mut combinations: Vec<Vec<KeyValue>> = vec![Vec::new()];
    for g in lists {
        combinations = combinations
            .into_iter()
            .flat_map(|before| {
                g.values.iter().map(move |v| {
                    let mut next = before.clone();
                    next.push((g.key.name, v.clone()));
                    next
                })
            })
            .collect();
    }
    combinations
}
