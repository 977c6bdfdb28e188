//! Speed-up lines: "A is 1.39x to 1.45x faster than B across 8 models (geometric mean
//! 1.42x)", from the ratio of total times per common model, with the report's
//! statistic.

use crate::fmt::{natural_cmp, times};
use crate::group::{ConfigKey, Entry, Stat};
use crate::table::Table;
use cnnbench_results::Quantity;
use std::collections::BTreeMap;

/// How configuration A compares with B over the models both ran.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Speedup {
    pub a: String,
    pub b: String,
    /// Per common model: time of B / time of A (above 1: A is faster).
    pub ratios: Vec<(String, f64)>,
    pub min: f64,
    pub max: f64,
    pub geomean: f64,
}

impl Speedup {
    pub(crate) fn new(a: String, b: String, ratios: Vec<(String, f64)>) -> Option<Speedup> {
        if ratios.is_empty() {
            return None;
        }
        let min = ratios.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
        let max = ratios.iter().map(|r| r.1).fold(0.0, f64::max);
        let geomean = (ratios.iter().map(|r| r.1.ln()).sum::<f64>() / ratios.len() as f64).exp();
        Some(Speedup {
            a,
            b,
            ratios,
            min,
            max,
            geomean,
        })
    }

    /// The same comparison seen from B.
    pub fn flipped(&self) -> Speedup {
        Speedup {
            a: self.b.clone(),
            b: self.a.clone(),
            ratios: self
                .ratios
                .iter()
                .map(|(m, r)| (m.clone(), 1.0 / r))
                .collect(),
            min: 1.0 / self.max,
            max: 1.0 / self.min,
            geomean: 1.0 / self.geomean,
        }
    }

    /// One plain-English line.
    pub fn sentence(&self) -> String {
        self.sentence_with("")
    }

    /// The line with `more` after the geometric mean inside its brackets (a conclusion's
    /// interval, or why it has none), so that `--speedups` and `--conclusions` word the
    /// same numbers the same way.
    pub(crate) fn sentence_with(&self, more: &str) -> String {
        let n = self.ratios.len();
        let across = if n == 1 {
            format!("on {}", self.ratios[0].0)
        } else {
            format!("across {n} models")
        };
        let gm = |g: f64| {
            if n == 1 {
                String::new()
            } else {
                format!(" (geometric mean {}{more})", times(g))
            }
        };
        let range = |lo: f64, hi: f64| {
            if times(lo) == times(hi) {
                times(lo)
            } else {
                format!("{} to {}", times(lo), times(hi))
            }
        };
        if self.min >= 1.0 {
            format!(
                "{} is {} faster than {} {across}{}",
                self.a,
                range(self.min, self.max),
                self.b,
                gm(self.geomean)
            )
        } else if self.max <= 1.0 {
            format!(
                "{} is {} slower than {} {across}{}",
                self.a,
                range(1.0 / self.max, 1.0 / self.min),
                self.b,
                gm(1.0 / self.geomean)
            )
        } else {
            format!(
                "{} is {} as fast as {} {across}{}: faster on some models, slower on others",
                self.a,
                range(self.min, self.max),
                self.b,
                gm(self.geomean)
            )
        }
    }
}

/// A configuration (device and software) and its total time per model: what speed-ups
/// and conclusions pair.
pub(crate) struct Config {
    pub(crate) key: ConfigKey,
    pub(crate) name: String,
    pub(crate) device: String,
    pub(crate) engine: String,
    /// Table index → total time by the statistic (the fastest row if several).
    pub(crate) totals: BTreeMap<usize, f64>,
    /// Table index → the entry of that fastest row.
    pub(crate) rows: BTreeMap<usize, usize>,
}

/// The configurations of the rows, in the order the tables first show them.
pub(crate) fn configs(entries: &[Entry], tables: &[Table], stat: Stat) -> Vec<Config> {
    let mut out: Vec<Config> = Vec::new();
    for (ti, t) in tables.iter().enumerate() {
        for &i in &t.rows {
            let e = &entries[i];
            let Some(total) = e.value(Quantity::Total, stat) else {
                continue;
            };
            let pos = match out.iter().position(|c| c.key == e.config) {
                Some(p) => p,
                None => {
                    out.push(Config {
                        key: e.config.clone(),
                        name: e.config_name(),
                        device: e.device.clone(),
                        engine: e.engine_label(),
                        totals: BTreeMap::new(),
                        rows: BTreeMap::new(),
                    });
                    out.len() - 1
                }
            };
            let c = &mut out[pos];
            if c.totals.get(&ti).is_none_or(|&t| total < t || t.is_nan()) {
                c.totals.insert(ti, total);
                c.rows.insert(ti, i);
            }
        }
    }
    out
}

/// The tables both configurations have, each with B's total over A's (above 1: A is
/// faster): the pairing of speed-ups and conclusions.
pub(crate) fn common_tables(a: &Config, b: &Config) -> Vec<(usize, f64)> {
    a.totals
        .iter()
        .filter_map(|(t, ta)| {
            let tb = b.totals.get(t)?;
            (*ta > 0.0).then(|| (*t, tb / ta))
        })
        .collect()
}

fn ratios(a: &Config, b: &Config, tables: &[Table]) -> Vec<(String, f64)> {
    common_tables(a, b)
        .into_iter()
        .map(|(t, r)| (model_name(&tables[t], tables), r))
        .collect()
}

/// A table's model name, with the input when the same model has several tables.
pub(crate) fn model_name(t: &Table, tables: &[Table]) -> String {
    let same = tables.iter().filter(|u| u.title == t.title).count();
    if same > 1 {
        format!("{} ({})", t.title, crate::group::input_desc(&t.key))
    } else {
        t.title.clone()
    }
}

/// Every pair of configurations with at least `min_models` models in common, each
/// line saying which is faster.
pub fn all_pairs(
    entries: &[Entry],
    tables: &[Table],
    stat: Stat,
    min_models: usize,
) -> Vec<Speedup> {
    let cs = configs(entries, tables, stat);
    let mut out = Vec::new();
    for i in 0..cs.len() {
        for j in i + 1..cs.len() {
            let r = ratios(&cs[i], &cs[j], tables);
            if r.len() < min_models.max(1) {
                continue;
            }
            if let Some(s) = Speedup::new(cs[i].name.clone(), cs[j].name.clone(), r) {
                out.push(if s.geomean >= 1.0 { s } else { s.flipped() });
            }
        }
    }
    out.sort_by(|x, y| natural_cmp(&x.a, &y.a).then(y.geomean.total_cmp(&x.geomean)));
    out
}

#[derive(Clone, Copy, PartialEq)]
enum By {
    Full,
    Device,
    Engine,
}

/// Lower-case words, so that `nn` does not match inside `cuDNN`.
fn words(s: &str) -> Vec<String> {
    s.split(|c: char| c.is_whitespace() || c == '·' || c == ',' || c == '(' || c == ')')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn has_words(hay: &str, pat: &[String]) -> bool {
    let h = words(hay);
    !pat.is_empty() && h.windows(pat.len()).any(|w| w == pat)
}

fn matching<'a>(cs: &'a [Config], pat: &str) -> (Vec<&'a Config>, By) {
    let eq = |s: &str| s.eq_ignore_ascii_case(pat.trim());
    let pw = words(pat);
    for (by, f) in [
        (
            By::Full,
            (&|c: &Config| eq(&c.name)) as &dyn Fn(&Config) -> bool,
        ),
        (By::Device, &|c: &Config| eq(&c.device)),
        (By::Engine, &|c: &Config| eq(&c.engine)),
        // Words of the engine label (`cuDNN 5.1.10`, `nn`), then of the device.
        (By::Engine, &|c: &Config| has_words(&c.engine, &pw)),
        (By::Device, &|c: &Config| has_words(&c.device, &pw)),
        (By::Full, &|c: &Config| has_words(&c.name, &pw)),
    ] {
        let found: Vec<&Config> = cs.iter().filter(|c| f(c)).collect();
        if !found.is_empty() {
            return (found, by);
        }
    }
    (Vec::new(), By::Full)
}

/// Speed-ups of configurations matching `a` over those matching `b`. A name matches
/// a configuration's full name, its device or its engine (case-insensitive), else
/// whole words of them (`cuDNN 5.1.10`, `nn`). When both sides name devices, like
/// engines are paired; when both name engines, like devices.
pub fn chosen(
    entries: &[Entry],
    tables: &[Table],
    stat: Stat,
    a: &str,
    b: &str,
) -> Result<Vec<Speedup>, String> {
    let cs = configs(entries, tables, stat);
    let known = || {
        cs.iter()
            .map(|c| format!("\"{}\"", c.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (sa, by_a) = matching(&cs, a);
    if sa.is_empty() {
        return Err(format!(
            "--speedups: no configuration matches \"{a}\"; the results hold {}",
            known()
        ));
    }
    let (sb, by_b) = matching(&cs, b);
    if sb.is_empty() {
        return Err(format!(
            "--speedups: no configuration matches \"{b}\"; the results hold {}",
            known()
        ));
    }
    let mut out = Vec::new();
    for ca in &sa {
        for cb in &sb {
            if ca.key == cb.key {
                continue;
            }
            let like = match (by_a, by_b) {
                (By::Device, By::Device) => ca.engine == cb.engine,
                (By::Engine, By::Engine) => ca.device == cb.device,
                _ => true,
            };
            if !like {
                continue;
            }
            if let Some(s) = Speedup::new(ca.name.clone(), cb.name.clone(), ratios(ca, cb, tables))
            {
                out.push(s);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(r: &[f64]) -> Speedup {
        Speedup::new(
            "A".into(),
            "B".into(),
            r.iter()
                .enumerate()
                .map(|(i, &x)| (format!("m{i}"), x))
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn sentences() {
        assert_eq!(
            s(&[1.39, 1.45, 1.42]).sentence(),
            "A is 1.39x to 1.45x faster than B across 3 models (geometric mean 1.42x)"
        );
        assert_eq!(
            s(&[0.5, 0.25]).sentence(),
            "A is 2.00x to 4.00x slower than B across 2 models (geometric mean 2.83x)"
        );
        assert!(s(&[0.9, 1.1])
            .sentence()
            .contains("0.90x to 1.10x as fast as B"));
        assert_eq!(s(&[2.0]).sentence(), "A is 2.00x faster than B on m0");
    }

    #[test]
    fn geometric_mean_and_flip() {
        let x = s(&[2.0, 8.0]);
        assert!((x.geomean - 4.0).abs() < 1e-12);
        let f = x.flipped();
        assert!((f.geomean - 0.25).abs() < 1e-12);
        assert_eq!((f.min, f.max), (0.125, 0.5));
        assert_eq!(f.a, "B");
    }
}
