//! The per-model tables of a report: which rows (runs of one model, input and mode)
//! belong together, in what order, under what title. Speed-ups and charts read them as
//! the report does, so this module sits below all three.

use crate::fmt::natural_cmp;
use crate::group::{Entry, Stat, TableKey};
use crate::record::Origin;
use cnnbench_results::Quantity;

/// The original README's layout, or ours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Device, Engine, Forward, Backward, Total, images/s.
    Default,
    /// `|GPU|cuDNN|Forward (ms)|Backward (ms)|Total (ms)|`, to paste beside old tables.
    Legacy,
}

/// One per-model table: indices into
/// [`Report::entries`](crate::report::Report::entries), fastest first.
#[derive(Clone, Debug)]
pub struct Table {
    pub key: TableKey,
    /// `resnet-50` in the legacy layout (the original's label), else the display name.
    pub title: String,
    pub rows: Vec<usize>,
    /// The model's family and place in the catalog's listing, when the catalog knows it.
    pub family: Option<crate::catalog::FamilyPlace>,
}

/// Groups rows into tables, fastest row first (by the statistic of the total), tables
/// in natural order of their titles.
pub(crate) fn make_tables(entries: &[Entry], layout: Layout, stat: Stat) -> Vec<Table> {
    let mut keys: Vec<TableKey> = Vec::new();
    for e in entries {
        if !keys.contains(&e.table) {
            keys.push(e.table.clone());
        }
    }
    let mut tables: Vec<Table> = keys
        .into_iter()
        .map(|key| {
            let mut rows: Vec<usize> = (0..entries.len())
                .filter(|&i| entries[i].table == key)
                .collect();
            let total = |i: usize| {
                entries[i]
                    .value(Quantity::Total, stat)
                    .unwrap_or(f64::INFINITY)
            };
            rows.sort_by(|&a, &b| total(a).total_cmp(&total(b)));
            let first = &entries[rows[0]];
            let legacy_label = rows.iter().find_map(|&i| {
                let e = &entries[i];
                (e.origin == Origin::Legacy)
                    .then(|| e.legacy_label.clone())
                    .flatten()
            });
            let title = match (layout, legacy_label) {
                (Layout::Legacy, Some(l)) if first.model_name == key.model_id => l,
                _ => first.model_name.clone(),
            };
            Table {
                key,
                title,
                rows,
                family: None,
            }
        })
        .collect();
    tables.sort_by(|a, b| {
        natural_cmp(&a.title, &b.title)
            .then(a.key.batch_size.cmp(&b.key.batch_size))
            .then(a.key.input.cmp(&b.key.input))
            .then(a.key.mode.as_str().cmp(b.key.mode.as_str()))
    });
    tables
}
