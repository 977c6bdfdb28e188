//! The timed quantities of a pass: the phases the harness times ([`Phase`]) and their
//! sum, `total`. Result files key their samples and summaries by these names.

use crate::engine_types::Phase;
use serde::{Deserialize, Serialize};
use std::borrow::Borrow;
use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

/// One timed quantity. In JSON, and wherever it is written, it is its lower-case name
/// (`forward`, `backward`, `allreduce`, `update`, `total`).
///
/// Quantities order, compare and hash by that name, as the strings they replace did:
/// a `BTreeMap<Quantity, _>` iterates and serialises in the same order as the
/// `BTreeMap<String, _>` of earlier versions (`backward`, `forward`, `total`,
/// `update`), so result files stay byte for byte the same, and such a map can still
/// be looked up by name (`summary["total"]`). [`Quantity::ALL`] is the display order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Quantity {
    Forward,
    Backward,
    /// Averaging the gradients across the ranks of a data-parallel run.
    Allreduce,
    Update,
    /// The sum of a pass's phases.
    Total,
}

impl Quantity {
    /// Every quantity in display order: the phases in pass order, then the total.
    pub const ALL: [Quantity; 5] = [
        Quantity::Forward,
        Quantity::Backward,
        Quantity::Allreduce,
        Quantity::Update,
        Quantity::Total,
    ];
    /// The phases, in pass order (every quantity but the total).
    pub const PHASES: [Quantity; 4] = [
        Quantity::Forward,
        Quantity::Backward,
        Quantity::Allreduce,
        Quantity::Update,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Quantity::Forward => "forward",
            Quantity::Backward => "backward",
            Quantity::Allreduce => "allreduce",
            Quantity::Update => "update",
            Quantity::Total => "total",
        }
    }

    /// The phase this quantity times, `None` for the total.
    pub fn phase(self) -> Option<Phase> {
        match self {
            Quantity::Forward => Some(Phase::Forward),
            Quantity::Backward => Some(Phase::Backward),
            Quantity::Allreduce => Some(Phase::Allreduce),
            Quantity::Update => Some(Phase::Update),
            Quantity::Total => None,
        }
    }
}

impl From<Phase> for Quantity {
    fn from(phase: Phase) -> Quantity {
        match phase {
            Phase::Forward => Quantity::Forward,
            Phase::Backward => Quantity::Backward,
            Phase::Allreduce => Quantity::Allreduce,
            Phase::Update => Quantity::Update,
        }
    }
}

impl std::fmt::Display for Quantity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not one of the quantities.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownQuantity(pub String);

impl std::fmt::Display for UnknownQuantity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown quantity \"{}\" (the quantities are forward, backward, allreduce, update and total)",
            self.0
        )
    }
}

impl std::error::Error for UnknownQuantity {}

impl std::str::FromStr for Quantity {
    type Err = UnknownQuantity;
    fn from_str(s: &str) -> Result<Quantity, UnknownQuantity> {
        Quantity::ALL
            .into_iter()
            .find(|q| q.as_str() == s)
            .ok_or_else(|| UnknownQuantity(s.to_string()))
    }
}

// Order, equality and hash agree with those of the name (see the type's documentation),
// which is what `Borrow<str>` requires.
impl Ord for Quantity {
    fn cmp(&self, other: &Quantity) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Quantity) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Hash for Quantity {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl Borrow<str> for Quantity {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, HashMap};

    #[test]
    fn names_round_trip() {
        for q in Quantity::ALL {
            assert_eq!(q.as_str().parse::<Quantity>(), Ok(q));
            assert_eq!(q.to_string(), q.as_str());
            assert_eq!(serde_json::to_string(&q).unwrap(), format!("\"{q}\""));
            assert_eq!(
                serde_json::from_str::<Quantity>(&format!("\"{q}\"")).unwrap(),
                q
            );
        }
        assert!("Total".parse::<Quantity>().is_err());
        assert!("loss"
            .parse::<Quantity>()
            .unwrap_err()
            .to_string()
            .contains("loss"));
    }

    #[test]
    fn phases_map_onto_quantities() {
        for p in [
            Phase::Forward,
            Phase::Backward,
            Phase::Allreduce,
            Phase::Update,
        ] {
            let q = Quantity::from(p);
            assert_eq!(q.as_str(), p.as_str());
            assert_eq!(q.phase(), Some(p));
        }
        assert_eq!(Quantity::Total.phase(), None);
        assert_eq!(
            Quantity::PHASES.map(|q| q.phase().unwrap()),
            [
                Phase::Forward,
                Phase::Backward,
                Phase::Allreduce,
                Phase::Update
            ]
        );
    }

    #[test]
    fn maps_keep_the_order_and_lookups_of_string_keys() {
        let typed: BTreeMap<Quantity, u8> = Quantity::ALL.into_iter().zip(0..).collect();
        let named: BTreeMap<String, u8> = Quantity::ALL
            .into_iter()
            .zip(0..)
            .map(|(q, i)| (q.to_string(), i))
            .collect();
        let order: Vec<&str> = typed.keys().map(|q| q.as_str()).collect();
        assert_eq!(
            order,
            ["allreduce", "backward", "forward", "total", "update"]
        );
        assert_eq!(
            serde_json::to_string(&typed).unwrap(),
            serde_json::to_string(&named).unwrap()
        );
        assert_eq!(typed["update"], 3);
        assert_eq!(typed.get("loss"), None);
        let hashed: HashMap<Quantity, u8> = typed.clone().into_iter().collect();
        assert_eq!(hashed["total"], 4);
        let back: BTreeMap<Quantity, u8> =
            serde_json::from_str(r#"{"total": 3, "forward": 0}"#).unwrap();
        assert_eq!(back[&Quantity::Total], 3);
        assert!(serde_json::from_str::<BTreeMap<Quantity, u8>>(r#"{"loss": 1}"#).is_err());
    }
}
