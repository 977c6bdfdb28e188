//! What the report knows about models beyond the result files: depth, parameters,
//! MACs and published error rates. The report crate does not depend on the zoo; the
//! command line passes a catalog backed by it (and tests pass a small fake).

use std::cell::RefCell;
use std::collections::HashMap;

/// Facts about one model at one input size.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ModelFacts {
    pub depth: usize,
    pub params: u64,
    /// Multiply-accumulates of one forward pass of one example.
    pub macs: u64,
    /// Published single-crop top-1 / top-5 error in percent, where known.
    pub top1_error: Option<f64>,
    pub top5_error: Option<f64>,
}

/// A source of model facts, usually the zoo.
pub trait ModelCatalog {
    /// The catalog's own name for `name` (a name or an alias), if it has the model.
    fn canonical_name(&self, name: &str) -> Option<String>;
    /// Facts about model `name` for one example of shape `[C, H, W]`.
    fn facts(&self, name: &str, input: [usize; 3]) -> Option<ModelFacts>;
    /// Where `name` sits in the catalog's own listing and which family it belongs to,
    /// so that charts put related models side by side rather than alphabetically.
    fn family(&self, _name: &str) -> Option<FamilyPlace> {
        None
    }
}

/// A model's family and its position in the catalog's listing (family by family).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FamilyPlace {
    pub family: String,
    /// Position of the model in the whole listing; smaller comes first.
    pub rank: usize,
}

/// A catalog that knows nothing: numbers come from the result files alone.
pub struct NoCatalog;

impl ModelCatalog for NoCatalog {
    fn canonical_name(&self, _: &str) -> Option<String> {
        None
    }
    fn facts(&self, _: &str, _: [usize; 3]) -> Option<ModelFacts> {
        None
    }
}

type FactsCache = HashMap<(String, [usize; 3]), Option<ModelFacts>>;

/// Remembers answers, since building a large model's graph is not free.
pub struct Cached<'a> {
    inner: &'a dyn ModelCatalog,
    facts: RefCell<FactsCache>,
}

impl<'a> Cached<'a> {
    pub fn new(inner: &'a dyn ModelCatalog) -> Self {
        Cached {
            inner,
            facts: RefCell::new(HashMap::new()),
        }
    }
}

impl ModelCatalog for Cached<'_> {
    fn canonical_name(&self, name: &str) -> Option<String> {
        self.inner.canonical_name(name)
    }
    fn facts(&self, name: &str, input: [usize; 3]) -> Option<ModelFacts> {
        let key = (name.to_string(), input);
        if let Some(f) = self.facts.borrow().get(&key) {
            return f.clone();
        }
        let f = self.inner.facts(name, input);
        self.facts.borrow_mut().insert(key, f.clone());
        f
    }
    fn family(&self, name: &str) -> Option<FamilyPlace> {
        self.inner.family(name)
    }
}
