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

/// One model the zoo can build, with what the CLI needs to list and select it.
#[derive(Clone, Copy, Debug)]
pub struct ZooEntry {
    /// The canonical name, as `cnnbench run` and result files spell it.
    pub name: &'static str,
    /// Other accepted names (e.g. torchvision's `googlenet`).
    pub aliases: &'static [&'static str],
    /// The family, for grouping in listings and reports.
    pub family: &'static str,
    /// The input `[C, H, W]` the reference counts are given for.
    pub default_input: [usize; 3],
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

const IMAGENET: [usize; 3] = [3, 224, 224];

const fn entry(
    name: &'static str,
    aliases: &'static [&'static str],
    family: &'static str,
    legacy: bool,
    build: fn([usize; 3]) -> Result<Graph, GraphError>,
) -> ZooEntry {
    ZooEntry {
        name,
        aliases,
        family,
        default_input: IMAGENET,
        legacy,
        build,
    }
}

/// A model whose reference counts are given for another input than 3×224×224.
const fn entry_at(
    name: &'static str,
    aliases: &'static [&'static str],
    family: &'static str,
    default_input: [usize; 3],
    build: fn([usize; 3]) -> Result<Graph, GraphError>,
) -> ZooEntry {
    ZooEntry {
        name,
        aliases,
        family,
        default_input,
        legacy: false,
        build,
    }
}

static ENTRIES: [ZooEntry; 23] = [
    entry("alexnet", &[], "alexnet", false, alexnet::alexnet),
    entry(
        "alexnet-bvlc",
        &["bvlc-alexnet", "caffe-alexnet"],
        "alexnet",
        // The original suite ran the Caffe model, converted with loadcaffe.
        true,
        alexnet::alexnet_bvlc,
    ),
    entry(
        "inception-v1",
        &["googlenet"],
        "inception",
        true,
        inception::inception_v1,
    ),
    entry("vgg16", &[], "vgg", true, vgg::vgg16),
    entry("vgg19", &[], "vgg", true, vgg::vgg19),
    entry("resnet18", &[], "resnet", true, resnet::resnet18),
    entry("resnet34", &[], "resnet", true, resnet::resnet34),
    entry("resnet50", &[], "resnet", true, resnet::resnet50),
    entry("resnet101", &[], "resnet", true, resnet::resnet101),
    entry("resnet152", &[], "resnet", true, resnet::resnet152),
    entry("resnet200", &[], "resnet", true, resnet::resnet200),
    entry(
        "resnext50-32x4d",
        &["resnext50_32x4d"],
        "resnext",
        false,
        resnet::resnext50_32x4d,
    ),
    entry(
        "wide-resnet50-2",
        &["wide_resnet50_2"],
        "wide-resnet",
        false,
        resnet::wide_resnet50_2,
    ),
    entry_at(
        "inception-v3",
        &["inception_v3"],
        "inception",
        [3, 299, 299],
        inception_v3::inception_v3,
    ),
    entry(
        "squeezenet1.0",
        &["squeezenet1_0"],
        "squeezenet",
        false,
        squeezenet::squeezenet1_0,
    ),
    entry("densenet121", &[], "densenet", false, densenet::densenet121),
    entry(
        "mobilenet-v2",
        &["mobilenet_v2"],
        "mobilenet",
        false,
        mobilenet::mobilenet_v2,
    ),
    entry(
        "mobilenet-v3-large",
        &["mobilenet_v3_large"],
        "mobilenet",
        false,
        mobilenet::mobilenet_v3_large,
    ),
    entry(
        "shufflenet-v2-x1.0",
        &["shufflenet_v2_x1_0"],
        "shufflenet",
        false,
        shufflenet::shufflenet_v2_x1_0,
    ),
    entry(
        "mnasnet1.0",
        &["mnasnet1_0"],
        "mnasnet",
        false,
        mnasnet::mnasnet1_0,
    ),
    entry(
        "efficientnet-b0",
        &["efficientnet_b0"],
        "efficientnet",
        false,
        efficientnet::efficientnet_b0,
    ),
    entry(
        "regnet-y-400mf",
        &["regnet_y_400mf"],
        "regnet",
        false,
        regnet::regnet_y_400mf,
    ),
    entry(
        "convnext-tiny",
        &["convnext_tiny"],
        "convnext",
        false,
        convnext::convnext_tiny,
    ),
];

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
        let [c, h, w] = self.default_input;
        (1..h.max(w))
            .map(|s| [c, s, s])
            .find(|&input| (self.build)(input).is_ok())
            .unwrap_or(self.default_input)
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

/// The facts every builder records about its model.
pub(crate) fn model_info(
    source: &str,
    citation: &str,
    top1_error: Option<f64>,
    top5_error: Option<f64>,
) -> ModelInfo {
    ModelInfo {
        source: Some(source.to_string()),
        citation: Some(citation.to_string()),
        top1_error,
        top5_error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cnnbench_graph::{Shape, INPUT_NAME};

    /// torchvision's parameters and MACs (conv and linear, from PyTorch's FLOP counter,
    /// halved) at the default input.
    const MODERN: [(&str, u64, u64); 12] = [
        ("mobilenet-v2", 3_504_872, 300_774_272),
        ("mobilenet-v3-large", 5_483_032, 216_589_760),
        ("efficientnet-b0", 5_288_548, 385_814_752),
        ("densenet121", 7_978_856, 2_834_161_664),
        ("convnext-tiny", 28_589_128, 4_455_531_264),
        ("regnet-y-400mf", 4_344_144, 401_842_848),
        ("squeezenet1.0", 1_248_424, 818_924_576),
        ("inception-v3", 23_834_568, 5_713_216_096),
        ("resnext50-32x4d", 25_028_904, 4_230_479_872),
        ("wide-resnet50-2", 68_883_240, 11_398_021_120),
        ("shufflenet-v2-x1.0", 2_278_604, 144_907_992),
        ("mnasnet1.0", 4_383_312, 314_415_872),
    ];

    #[test]
    fn modern_models_match_torchvision_counts() {
        for (name, params, macs) in MODERN {
            let g = build(name, None).unwrap();
            assert_eq!(g.params(), params, "{name} params");
            // Within 0.1% is the requirement; the counts are in fact exact.
            assert_eq!(g.macs(), macs, "{name} MACs");
            assert_eq!(g.output_shape(), &Shape::flat(1000), "{name}");
        }
    }

    #[test]
    fn modern_models_accept_torchvision_spellings() {
        for (alias, name) in [
            ("mobilenet_v2", "mobilenet-v2"),
            ("mobilenet_v3_large", "mobilenet-v3-large"),
            ("efficientnet_b0", "efficientnet-b0"),
            ("convnext_tiny", "convnext-tiny"),
            ("regnet_y_400mf", "regnet-y-400mf"),
            ("squeezenet1_0", "squeezenet1.0"),
            ("inception_v3", "inception-v3"),
            ("resnext50_32x4d", "resnext50-32x4d"),
            ("wide_resnet50_2", "wide-resnet50-2"),
            ("shufflenet_v2_x1_0", "shufflenet-v2-x1.0"),
            ("mnasnet1_0", "mnasnet1.0"),
            ("DenseNet-121", "densenet121"),
        ] {
            assert_eq!(find(alias).map(|e| e.name), Some(name), "{alias}");
        }
        assert_eq!(
            find("inception-v3").map(|e| e.default_input),
            Some([3, 299, 299])
        );
    }

    #[test]
    fn smallest_inputs() {
        let smallest = |name: &str| find(name).map(|e| e.smallest_input()[1]);
        assert_eq!(smallest("inception-v3"), Some(75));
        assert_eq!(smallest("resnet50"), Some(1));
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
            let info = g.info();
            assert!(info.source.is_some(), "{}", e.name);
            assert!(info.citation.is_some(), "{}", e.name);
            assert!(info.top5_error.is_some(), "{}", e.name);
        }
        let g = build("resnet50", None).unwrap();
        assert_eq!(g.info().top1_error, Some(24.01));
        assert_eq!(g.info().top5_error, Some(7.02));
        let g = build("inception-v1", None).unwrap();
        assert_eq!(g.info().top1_error, None);
        assert_eq!(g.info().top5_error, Some(10.07));
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
        let g = build("resnet18", Some([3, 32, 32])).unwrap();
        assert_eq!(g.input_shape(), [3, 32, 32]);
        assert_eq!(g.params(), 11_689_512);
        let g = build("inception-v1", Some([3, 32, 32])).unwrap();
        assert_eq!(g.input_shape(), [3, 32, 32]);
        // Grey-scale input: only the first convolution changes.
        let g = build("vgg16", Some([1, 224, 224])).unwrap();
        assert_eq!(g.params(), 138_357_544 - 2 * 64 * 9);
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
