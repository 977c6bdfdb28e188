//! The model zoo: one small builder per network, written against [`GraphBuilder`] so that
//! each reads like its paper's table, and a registry that finds them by name.
//!
//! Every model's parameter count and MACs equal the reference implementation's
//! (torchvision, or Caffe for `alexnet-bvlc`), so benchmark numbers are comparable with
//! what PyTorch users measure.
//!
//! [`GraphBuilder`]: cnnbench_graph::GraphBuilder

pub mod alexnet;
mod blocks;
pub mod convnext;
pub mod densenet;
pub mod efficientnet;
pub mod inception;
pub mod inception_v3;
pub mod mnasnet;
pub mod mobilenet;
pub mod regnet;
pub mod resnet;
pub mod shufflenet;
pub mod squeezenet;
pub mod vgg;

use cnnbench_graph::{Graph, GraphError, ModelInfo};
use thiserror::Error;

/// One model the zoo can build, with what the CLI needs to list and select it: each
/// family's file declares its models' entries next to their builders (like torchvision
/// registers a model with its weights' meta), and the registry is assembled from those.
#[derive(Clone, Copy, Debug)]
pub struct ZooEntry {
    /// The canonical name, as `cnnbench run` and result files spell it.
    pub name: &'static str,
    /// Other accepted names (e.g. torchvision's `googlenet`).
    pub aliases: &'static [&'static str],
    /// The family, for grouping in listings and reports.
    pub family: &'static str,
    /// What the builder reproduces, e.g. "torchvision resnet50" (the graph's
    /// [`ModelInfo::source`]).
    pub source: &'static str,
    /// The paper that introduced the network.
    pub citation: &'static str,
    /// Published single-crop ImageNet top-1 error, percent (`None`: not published).
    pub top1_error: Option<f64>,
    /// Published single-crop ImageNet top-5 error, percent.
    pub top5_error: Option<f64>,
    /// The reference implementation's trainable parameters (torchvision's, or Caffe's
    /// for `alexnet-bvlc`); the built graph has exactly these.
    pub params: u64,
    /// Multiply-accumulates per image at `default_input` (convolutions and linear
    /// layers: PyTorch's FLOP counter, halved); the built graph has exactly these.
    pub macs: u64,
    /// The input `[C, H, W]` the reference counts are given for.
    pub default_input: [usize; 3],
    /// The smallest square image side (with the default channels) the model can be
    /// built for; every smaller one fails.
    pub min_input: usize,
    /// One of the original cnn-benchmarks suite's ten models.
    pub legacy: bool,
    /// Builds the network for an input size; a layer the input is too small for is
    /// named in the error.
    pub build: fn([usize; 3]) -> Result<Graph, GraphError>,
}

/// Why the zoo could not build a model.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ZooError {
    /// No model has this name or alias; `suggestions` holds the closest names.
    #[error("{}", unknown_message(.name, .suggestions))]
    Unknown {
        name: String,
        suggestions: Vec<String>,
    },
    /// The model cannot be built at the requested input size (the error names the layer).
    #[error(transparent)]
    Graph(#[from] GraphError),
}

fn unknown_message(name: &str, suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        format!("unknown model \"{name}\" (cnnbench models lists all)")
    } else {
        format!(
            "unknown model \"{name}\"; did you mean {}? (cnnbench models lists all)",
            suggestions.join(", ")
        )
    }
}

/// The input most models' reference counts are given for.
pub(crate) const IMAGENET: [usize; 3] = [3, 224, 224];

/// Each family's models, in display order: the order of the guide's zoo table
/// (docs/src/zoo.md), of `cnnbench models` and of the report's charts.
const FAMILIES: &[&[ZooEntry]] = &[
    alexnet::MODELS,
    inception::MODELS,
    inception_v3::MODELS,
    vgg::MODELS,
    resnet::MODELS,
    squeezenet::MODELS,
    densenet::MODELS,
    mobilenet::MODELS,
    shufflenet::MODELS,
    mnasnet::MODELS,
    efficientnet::MODELS,
    regnet::MODELS,
    convnext::MODELS,
];

const fn count(families: &[&[ZooEntry]]) -> usize {
    let (mut i, mut n) = (0, 0);
    while i < families.len() {
        n += families[i].len();
        i += 1;
    }
    n
}

/// The families' entries one after another.
const fn concat<const N: usize>(families: &[&[ZooEntry]]) -> [ZooEntry; N] {
    let mut all = [families[0][0]; N];
    let (mut i, mut n) = (0, 0);
    while i < families.len() {
        let mut j = 0;
        while j < families[i].len() {
            all[n] = families[i][j];
            n += 1;
            j += 1;
        }
        i += 1;
    }
    all
}

const MODEL_COUNT: usize = count(FAMILIES);

static ENTRIES: [ZooEntry; MODEL_COUNT] = concat::<MODEL_COUNT>(FAMILIES);

/// Every zoo model, in display order (by family, then size).
pub fn entries() -> &'static [ZooEntry] {
    &ENTRIES
}

/// The spelling-insensitive key of a name: lower case, letters and digits only, so that
/// `ResNet-50`, `resnet_50` and `resnet50` are the same model.
fn key(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

impl ZooEntry {
    /// The smallest square input (with the default channels) the model can be built
    /// for, e.g. for quick tests at the smallest cost.
    pub fn smallest_input(&self) -> [usize; 3] {
        [self.default_input[0], self.min_input, self.min_input]
    }

    /// The facts the built graph records about its model.
    pub fn info(&self) -> ModelInfo {
        ModelInfo {
            source: Some(self.source.to_string()),
            citation: Some(self.citation.to_string()),
            top1_error: self.top1_error,
            top5_error: self.top5_error,
        }
    }

    /// The name and aliases.
    fn spellings(&self) -> impl Iterator<Item = &'static str> {
        std::iter::once(self.name).chain(self.aliases.iter().copied())
    }
}

/// Looks a model up by name or alias, ignoring case and `-`/`_` (so torchvision's
/// `inception_v1` or `GoogLeNet` work as well as `inception-v1`).
pub fn find(name: &str) -> Option<&'static ZooEntry> {
    let wanted = key(name);
    if wanted.is_empty() {
        return None;
    }
    ENTRIES
        .iter()
        .find(|e| e.spellings().any(|s| key(s) == wanted))
}

/// Builds a model at `input` (or its default input): the one call the CLI needs.
pub fn build(name: &str, input: Option<[usize; 3]>) -> Result<Graph, ZooError> {
    let entry = find(name).ok_or_else(|| ZooError::Unknown {
        name: name.to_string(),
        suggestions: suggest(name),
    })?;
    Ok((entry.build)(input.unwrap_or(entry.default_input))?)
}

/// The original suite's ten models, in its order, so runs can be compared with the
/// published cnn-benchmarks numbers.
pub fn legacy_models() -> Vec<&'static str> {
    ENTRIES
        .iter()
        .filter(|e| e.legacy)
        .map(|e| e.name)
        .collect()
}

/// Below this Jaro-Winkler similarity a model name is not offered as a suggestion.
const SUGGESTION_THRESHOLD: f64 = 0.8;

/// Up to three model names closest to a mistyped `name` (best first), for "did you
/// mean" messages.
pub fn suggest(name: &str) -> Vec<String> {
    let wanted = key(name);
    if wanted.is_empty() {
        return Vec::new();
    }
    let mut scored: Vec<(f64, usize)> = ENTRIES
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let best = e
                .spellings()
                .map(|s| strsim::jaro_winkler(&wanted, &key(s)))
                .fold(0.0, f64::max);
            (best, i)
        })
        .filter(|&(score, _)| score >= SUGGESTION_THRESHOLD)
        .collect();
    // Best score first; ties keep display order.
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(3)
        .map(|(_, i)| ENTRIES[i].name.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cnnbench_graph::{Shape, INPUT_NAME};

    /// The counts come from each entry, which gives the reference implementation's.
    #[test]
    fn every_model_matches_its_reference_counts() {
        assert_eq!(entries().len(), 23);
        for e in entries() {
            let g = (e.build)(e.default_input).unwrap();
            assert_eq!(g.params(), e.params, "{} params", e.name);
            // Within 0.1% is the requirement; the counts are in fact exact.
            assert_eq!(g.macs(), e.macs, "{} MACs", e.name);
            assert_eq!(g.output_shape(), &Shape::flat(1000), "{}", e.name);
        }
    }

    #[test]
    fn every_spelling_of_every_model_finds_it() {
        let variants = |s: &str| {
            [
                s.to_string(),
                s.to_uppercase(),
                s.replace('-', "_"),
                s.replace(['-', '_', '.'], ""),
            ]
        };
        for e in entries() {
            for spelling in e.spellings() {
                for v in variants(spelling) {
                    assert_eq!(find(&v).map(|f| f.name), Some(e.name), "{v}");
                }
            }
        }
    }

    #[test]
    fn min_inputs_are_the_smallest_that_build() {
        for e in entries() {
            let [c, h, w] = e.smallest_input();
            assert_eq!((c, h, w), (e.default_input[0], e.min_input, e.min_input));
            assert!(e.min_input >= 1, "{}", e.name);
            assert!((e.build)([c, h, w]).is_ok(), "{} at {h}", e.name);
            for s in 1..e.min_input {
                assert!((e.build)([c, s, s]).is_err(), "{} builds at {s}", e.name);
            }
        }
    }
    use std::collections::HashSet;

    #[test]
    fn every_model_builds_and_round_trips_through_json() {
        for e in entries() {
            let g = (e.build)(e.default_input).unwrap();
            assert_eq!(g.name(), e.name);
            assert_eq!(g.input_shape(), e.default_input);
            let back = Graph::from_json(&g.to_json()).unwrap();
            assert_eq!(back, g, "{} does not round-trip", e.name);
        }
    }

    #[test]
    fn node_names_are_unique_and_never_input() {
        for e in entries() {
            let g = (e.build)(e.default_input).unwrap();
            let mut seen = HashSet::new();
            for n in g.nodes() {
                assert_ne!(n.name, INPUT_NAME, "{}", e.name);
                assert!(seen.insert(n.name.as_str()), "{}: {} twice", e.name, n.name);
            }
        }
    }

    #[test]
    fn weight_specs_cover_every_parameter_and_buffer() {
        for e in entries() {
            let g = (e.build)(e.default_input).unwrap();
            let specs = g.weight_specs();
            let count = |trainable: bool| -> u64 {
                specs
                    .iter()
                    .filter(|s| s.trainable == trainable)
                    .map(|s| s.shape.iter().product::<usize>() as u64)
                    .sum()
            };
            assert_eq!(count(true), g.params(), "{}", e.name);
            assert_eq!(count(false), g.buffers(), "{}", e.name);
            let keys: std::collections::HashSet<&str> =
                specs.iter().map(|s| s.key.as_str()).collect();
            assert_eq!(keys.len(), specs.len(), "{}: duplicate weight keys", e.name);
        }
    }

    #[test]
    fn every_model_records_its_provenance() {
        for e in entries() {
            let g = (e.build)(e.default_input).unwrap();
            assert_eq!(g.info(), &e.info(), "{}", e.name);
            assert!(!e.source.is_empty(), "{}", e.name);
            assert!(!e.citation.is_empty(), "{}", e.name);
            assert!(e.top5_error.is_some(), "{}", e.name);
        }
    }

    #[test]
    fn registry_names_and_aliases_are_distinct() {
        // An alias may spell the entry's own name differently (torchvision's
        // `mobilenet_v2` for `mobilenet-v2`, listed for users), but no spelling may lead
        // to two entries.
        let mut seen = HashSet::new();
        for e in entries() {
            let keys: HashSet<String> = e.spellings().map(key).collect();
            for k in keys {
                assert!(seen.insert(k.clone()), "{k} is ambiguous");
            }
            for s in e.spellings() {
                assert_eq!(find(s).map(|f| f.name), Some(e.name));
            }
        }
    }

    #[test]
    fn find_accepts_aliases_case_and_separators() {
        let name = |s: &str| find(s).map(|e| e.name);
        assert_eq!(name("resnet50"), Some("resnet50"));
        assert_eq!(name("ResNet-50"), Some("resnet50"));
        assert_eq!(name("resnet_50"), Some("resnet50"));
        assert_eq!(name("inception_v1"), Some("inception-v1"));
        assert_eq!(name("Inception-V1"), Some("inception-v1"));
        assert_eq!(name("GoogLeNet"), Some("inception-v1"));
        assert_eq!(name("VGG-16"), Some("vgg16"));
        assert_eq!(name("alexnet_bvlc"), Some("alexnet-bvlc"));
        assert_eq!(name("bvlc_alexnet"), Some("alexnet-bvlc"));
        assert_eq!(name("AlexNet"), Some("alexnet"));
        assert_eq!(name("DenseNet-121"), Some("densenet121"));
        assert_eq!(name("MobileNet_V3_Large"), Some("mobilenet-v3-large"));
        assert_eq!(name(""), None);
        assert_eq!(name("-"), None);
        assert_eq!(name("resnet"), None);
    }

    #[test]
    fn unknown_names_get_suggestions() {
        let err = build("resnt50", None).unwrap_err();
        let ZooError::Unknown { name, suggestions } = &err else {
            panic!("expected Unknown, got {err}");
        };
        assert_eq!(name, "resnt50");
        assert_eq!(suggestions.first().map(String::as_str), Some("resnet50"));
        assert!(suggestions.len() <= 3);
        let message = err.to_string();
        assert!(
            message.starts_with("unknown model \"resnt50\"; did you mean resnet50"),
            "{message}"
        );
        assert!(
            message.ends_with("? (cnnbench models lists all)"),
            "{message}"
        );

        assert_eq!(suggest("vgg")[..2], ["vgg16", "vgg19"]);
        assert_eq!(
            suggest("googlenet2").first().map(String::as_str),
            Some("inception-v1")
        );
        assert!(suggest("transformer").is_empty());
        let err = build("transformer", None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown model \"transformer\" (cnnbench models lists all)"
        );
    }

    #[test]
    fn build_takes_the_input_size() {
        let params = |name: &str| find(name).unwrap().params;
        let g = build("resnet18", Some([3, 32, 32])).unwrap();
        assert_eq!(g.input_shape(), [3, 32, 32]);
        assert_eq!(g.params(), params("resnet18"));
        let g = build("inception-v1", Some([3, 32, 32])).unwrap();
        assert_eq!(g.input_shape(), [3, 32, 32]);
        // Grey-scale input: only the first convolution changes.
        let g = build("vgg16", Some([1, 224, 224])).unwrap();
        assert_eq!(g.params(), params("vgg16") - 2 * 64 * 9);
    }

    #[test]
    fn too_small_inputs_are_errors_naming_the_layer() {
        for (name, input) in [
            ("alexnet-bvlc", [3, 32, 32]),
            ("alexnet", [3, 16, 16]),
            ("vgg19", [3, 16, 16]),
            ("inception-v1", [3, 8, 8]),
        ] {
            let err = build(name, Some(input)).unwrap_err();
            assert!(
                matches!(&err, ZooError::Graph(GraphError::Node { .. })),
                "{name}: {err}"
            );
            assert!(err.to_string().starts_with("node \""), "{name}: {err}");
        }
        let err = build("resnet50", Some([3, 0, 0])).unwrap_err();
        assert!(matches!(err, ZooError::Graph(_)), "{err}");
    }

    #[test]
    fn legacy_suite_is_the_original_ten() {
        assert_eq!(
            legacy_models(),
            [
                "alexnet-bvlc",
                "inception-v1",
                "vgg16",
                "vgg19",
                "resnet18",
                "resnet34",
                "resnet50",
                "resnet101",
                "resnet152",
                "resnet200"
            ]
        );
    }
}
