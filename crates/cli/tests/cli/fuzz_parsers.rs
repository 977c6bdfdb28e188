//! A fuzz harness for every parser a user's file reaches: model JSON, ONNX (with its
//! weights), Caffe prototxt, safetensors weights, result files (ours and the original
//! suite's), a result's run spec (`run --again`'s input), a job (`run --job -`'s input, a
//! child's whole work), matrix TOML and aliases TOML. Valid files are mutated — bits flipped, cut
//! short, a piece copied elsewhere (deeper nesting, repeated keys), hostile tokens
//! inserted (huge and negative numbers, NaN, open brackets) — and each parse must return,
//! without a panic, within a time bound. It runs on stable Rust inside the test suite
//! (proptest, a fixed number of cases); `PROPTEST_CASES=20000` runs it longer.

use cnnbench_graph::{Graph, Weights};
use proptest::prelude::*;
use std::time::{Duration, Instant};

/// A parse that takes longer than this on a valid file's mutation is a bug: the inputs
/// are kilobytes, and the valid files parse in milliseconds.
const PER_CASE: Duration = Duration::from_secs(2);

const PROTOTXT: &str = include_str!("../../../import/tests/fixtures/tiny.prototxt");
const RESULT: &str = include_str!("../../../report/tests/fixtures/ours/base/resnet18.json");
const LEGACY_RESULT: &str =
    include_str!("../../../report/tests/fixtures/legacy/outputs/cpu/189638.json");
const ALIASES: &str = include_str!("../../../report/tests/fixtures/legacy-aliases.toml");
const MATRIX: &str = r#"format = "cnnbench-matrix"
version = 1
models = ["resnet18", "alexnet-bvlc"]
engines = ["burn-flex"]
batch_sizes = [1, 2, 3]
modes = ["train", "infer"]
image_sizes = [64, "96x80"]
precisions = ["f32"]
passes = 1
warmup = 0
seed = 7

[[exclude]]
batch_size = 3
mode = "infer"
"#;

/// What can happen to a file on its way to us.
#[derive(Debug, Clone)]
enum Mutation {
    FlipBit {
        at: usize,
        bit: u8,
    },
    CutAt(usize),
    /// Copies `len` bytes from `from` to `to`: nests objects and repeats keys.
    Splice {
        from: usize,
        len: usize,
        to: usize,
    },
    Insert {
        at: usize,
        token: &'static str,
    },
}

const TOKENS: &[&str] = &[
    "[",
    "{",
    "]",
    "}",
    "\"",
    "\\",
    ",",
    ":",
    "=",
    "\n",
    "\0",
    "-1",
    "0",
    "1e308",
    "-1e308",
    "NaN",
    "inf",
    "18446744073709551615",
    "340282366920938463463374607431768211456",
    "9999999999",
    "\u{1b}[2J",
    "é",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
    "{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":",
];

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Mutation::FlipBit { at, bit }),
        any::<usize>().prop_map(Mutation::CutAt),
        (any::<usize>(), 1usize..400, any::<usize>())
            .prop_map(|(from, len, to)| Mutation::Splice { from, len, to }),
        (any::<usize>(), proptest::sample::select(TOKENS))
            .prop_map(|(at, token)| Mutation::Insert { at, token }),
    ]
}

fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    proptest::collection::vec(mutation(), 1..6)
}

fn mutate(valid: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut bytes = valid.to_vec();
    for m in mutations {
        if bytes.is_empty() {
            break;
        }
        let n = bytes.len();
        match *m {
            Mutation::FlipBit { at, bit } => bytes[at % n] ^= 1 << bit,
            Mutation::CutAt(at) => bytes.truncate(at % n),
            Mutation::Splice { from, len, to } => {
                let from = from % n;
                let piece = bytes[from..(from + len).min(n)].to_vec();
                let to = to % n;
                bytes.splice(to..to, piece);
            }
            Mutation::Insert { at, token } => {
                let at = at % n;
                bytes.splice(at..at, token.bytes());
            }
        }
    }
    bytes
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs one parse and checks that it came back in time (a panic fails the case itself).
fn bounded<T>(what: &str, parse: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let out = parse();
    let took = started.elapsed();
    assert!(took < PER_CASE, "{what} took {took:?} on a mutated file");
    out
}

/// The prototxt fixture as a Graph, with weights: the source of the JSON, ONNX and
/// safetensors inputs.
fn tiny() -> (Graph, Weights) {
    let graph = cnnbench_import::caffe::from_prototxt(PROTOTXT).expect("the fixture parses");
    let weights = Weights::initial(&graph, 1);
    (graph, weights)
}

fn onnx_bytes() -> &'static [u8] {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES.get_or_init(|| {
        let (graph, weights) = tiny();
        cnnbench_import::onnx::export::to_onnx(&graph, &weights).expect("the fixture exports")
    })
}

fn safetensors_bytes() -> &'static [u8] {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES.get_or_init(|| tiny().1.to_safetensors().expect("the weights encode"))
}

/// A result's recorded run spec (what `run --again` reads, and the heart of a `--job`):
/// two zoo models and a model file, with the options a user changes most set.
fn spec_json() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        let mut spec = cnnbench_results::RunSpec::new(
            vec![
                cnnbench_results::ModelRef::Zoo {
                    name: "resnet18".into(),
                },
                cnnbench_results::ModelRef::File {
                    path: "tiny.json".into(),
                    sha256: "0".repeat(64),
                },
            ],
            "burn-flex",
        );
        spec.passes = 3;
        spec.warmup = 0;
        spec.threads = Some(2);
        serde_json::to_string_pretty(&spec).expect("a spec serialises")
    })
}

/// A job as a data-parallel rank reads it on standard input: [`spec_json`]'s spec, a role
/// and where its results go.
fn job_json() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        use cnnbench_plan::job::{encode, Delivery, Job, Role};
        encode(&Job {
            spec: serde_json::from_str(spec_json()).expect("the spec reads back"),
            role: Role::Rank,
            delivery: Delivery {
                output: "results".into(),
                label: Some("host-1".into()),
                json: false,
                quiet: true,
                force: false,
                require_clean: false,
                retries: 2,
                round: None,
            },
        })
        .expect("a job encodes")
    })
}

fn model_json() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| tiny().0.to_json())
}

#[test]
fn the_valid_files_parse() {
    // Otherwise every mutation would be rejected at the first byte and prove nothing.
    assert!(Graph::from_json(model_json()).is_ok());
    let imported = cnnbench_import::onnx::from_onnx_with_weights(onnx_bytes(), "t", None).unwrap();
    assert!(imported.weights_complete(), "{:?}", imported.notes);
    assert!(Weights::from_safetensors(safetensors_bytes()).is_ok());
    if let Err(e) = cnnbench_plan::matrix::Matrix::parse(MATRIX, &["burn-flex"]) {
        panic!("{e}");
    }
    assert!(cnnbench_report::Aliases::parse(ALIASES).is_ok());
    let spec: cnnbench_results::RunSpec = serde_json::from_str(spec_json()).unwrap();
    assert_eq!(spec.validate(), Ok(()));
    if let Err(e) = cnnbench_plan::job::decode(job_json()) {
        panic!("{e:#}");
    }
    for (name, text) in [("result.json", RESULT), ("legacy.json", LEGACY_RESULT)] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        assert!(cnnbench_report::load::load_file(&path).is_ok(), "{name}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn mutated_model_json_never_panics(m in mutations()) {
        let input = text(&mutate(model_json().as_bytes(), &m));
        let _ = bounded("model JSON", || Graph::from_json(&input));
    }

    #[test]
    fn mutated_onnx_with_weights_never_panics(m in mutations()) {
        let input = mutate(onnx_bytes(), &m);
        let _ = bounded("ONNX", || cnnbench_import::onnx::from_onnx_with_weights(&input, "t", None));
    }

    #[test]
    fn mutated_prototxt_never_panics(m in mutations()) {
        let input = text(&mutate(PROTOTXT.as_bytes(), &m));
        let _ = bounded("prototxt", || cnnbench_import::caffe::from_prototxt(&input));
    }

    #[test]
    fn mutated_safetensors_never_panics(m in mutations()) {
        let input = mutate(safetensors_bytes(), &m);
        let _ = bounded("safetensors", || Weights::from_safetensors(&input));
    }

    #[test]
    fn mutated_matrix_toml_never_panics(m in mutations()) {
        let input = text(&mutate(MATRIX.as_bytes(), &m));
        let _ = bounded("matrix TOML", || cnnbench_plan::matrix::Matrix::parse(&input, &["burn-flex"]));
    }

    #[test]
    fn mutated_aliases_toml_never_panics(m in mutations()) {
        let input = text(&mutate(ALIASES.as_bytes(), &m));
        let _ = bounded("aliases TOML", || cnnbench_report::Aliases::parse(&input));
    }

    /// `run --again`'s input: a result's spec, parsed and then checked as the command
    /// line's would be (`validate`), must come back without a panic.
    #[test]
    fn mutated_run_specs_never_panic(m in mutations()) {
        let input = text(&mutate(spec_json().as_bytes(), &m));
        let _ = bounded("run spec", || {
            serde_json::from_str::<cnnbench_results::RunSpec>(&input).map(|spec| spec.validate())
        });
    }

    /// `run --job -`'s input, decoded and checked as a child process does.
    #[test]
    fn mutated_jobs_never_panic(m in mutations()) {
        let input = text(&mutate(job_json().as_bytes(), &m));
        let _ = bounded("job", || cnnbench_plan::job::decode(&input));
    }

    #[test]
    fn mutated_result_files_never_panics(m in mutations(), legacy in any::<bool>()) {
        let valid = if legacy { LEGACY_RESULT } else { RESULT };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        std::fs::write(&path, mutate(valid.as_bytes(), &m)).unwrap();
        let _ = bounded("result file", || cnnbench_report::load::load_file(&path));
    }
}
