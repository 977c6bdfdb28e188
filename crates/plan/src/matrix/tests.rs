use super::*;
use cnnbench_results::scenario::{BatcherSpec, ScenarioKind};

const ENGINES: &[&str] = &["burn-flex", "torch-cpu", "torch-cuda"];

fn parse(body: &str) -> Result<Matrix, MatrixError> {
    Matrix::parse(
        &format!("format = \"cnnbench-matrix\"\nversion = 1\n{body}"),
        ENGINES,
    )
}

/// A cell's values of the matrix's lists, as `plan --list` shows them.
fn listed(c: &Cell) -> Vec<String> {
    c.listed
        .iter()
        .map(|(key, value)| format!("{key} {}", axes::show(value)))
        .collect()
}

fn err(body: &str) -> String {
    match parse(body) {
        Ok(m) => panic!("expected an error, got {} cells", m.cells.len()),
        Err(e) => e.to_string(),
    }
}

/// 2×10⁹ cells were made until the kernel killed the process at 23.6 GB; they are
/// counted first now, and the file is read with the bounds the other readers have.
#[test]
fn huge_matrices_and_files_that_are_not_matrices_are_refused_at_once() {
    let batches: Vec<String> = (1..=400).map(|b| b.to_string()).collect();
    let sizes: Vec<String> = (32..132).map(|s| s.to_string()).collect();
    let started = std::time::Instant::now();
    let e = err(&format!(
        "models = [\"resnet18\"]\nengines = [\"burn-flex\"]\nbatch_sizes = [{}]\nimage_sizes = [{}]\nmodes = [\"train\", \"infer\", \"step\"]",
        batches.join(", "),
        sizes.join(", ")
    ));
    assert!(e.contains("120000 cells") && e.contains("split"), "{e}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    for path in ["/dev/zero", "/"] {
        let e = Matrix::load(Path::new(path), ENGINES)
            .unwrap_err()
            .to_string();
        assert!(e.contains(path), "{e}");
    }
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.toml");
    std::fs::write(&big, vec![b'#'; (MAX_MATRIX_BYTES + 1) as usize]).unwrap();
    let e = Matrix::load(&big, ENGINES).unwrap_err().to_string();
    assert!(e.contains("big.toml"), "{e}");
}

/// A list is counted against the cells a matrix may make before its values are
/// compared pair by pair: half a million values (a megabyte holds them) took minutes to
/// refuse. The list here ends with its first value again, so a pair check that ran
/// first would have said "twice" (after some 5×10⁹ comparisons) instead of the count.
#[test]
fn a_list_longer_than_the_cells_a_matrix_may_make_is_refused_before_its_pairs() {
    let repeats: Vec<String> = (1..=MAX_CELLS + 1)
        .map(|r| r.to_string())
        .chain(["1".to_string()])
        .collect();
    let e = err(&format!(
        "models = [\"resnet18\"]\nengines = [\"burn-flex\"]\nrepeat = [{}]",
        repeats.join(", ")
    ));
    assert!(
        e.contains(&format!("{} cells", MAX_CELLS + 2)) && !e.contains("twice"),
        "{e}"
    );
}

#[test]
fn cells_are_the_cross_product_in_a_fixed_order() {
    let m = parse(
        r#"models = ["resnet18", "ResNet-50"]
engines = ["burn-flex", "torch-cpu"]
batch_sizes = [16, 32]
precisions = ["f32", "bf16"]"#,
    )
    .unwrap();
    assert_eq!(m.cells.len(), 2 * 2 * 2 * 2);
    let first = &m.cells[0];
    assert_eq!(
        (
            first.model.as_str(),
            first.engine.as_str(),
            first.batch_size
        ),
        ("resnet18", "burn-flex", 16)
    );
    assert_eq!(first.precision, Precision::F32);
    assert_eq!(m.cells[1].precision, Precision::Bf16);
    assert_eq!(m.cells[2].batch_size, 32);
    assert_eq!(m.cells[4].engine, "torch-cpu");
    // Aliases become the zoo's own name.
    assert_eq!(m.cells[8].model, "resnet50");
    assert!(m.cells.iter().enumerate().all(|(i, c)| c.index == i));
    assert_eq!(m.cells[0].mode, Mode::Train);
    assert_eq!(m.base.passes, 10);
    assert_eq!(m.base.warmup, 1);
}

#[test]
fn exclusions_drop_exactly_the_matching_cells_and_renumber() {
    let m = parse(
        r#"models = ["resnet18", "resnet50"]
engines = ["burn-flex", "torch-cpu"]
batch_sizes = [16, 32]
image_sizes = [64, "32x48"]

[[exclude]]
model = "resnet50"
engine = "torch-cpu"

[[exclude]]
batch_size = 32
image_size = "32x48"
"#,
    )
    .unwrap();
    // 16 cells; the first entry drops resnet50 × torch-cpu (4), the second every
    // 32x48 at batch 32 (4, one of them already dropped).
    assert_eq!(m.cells.len(), 16 - 4 - 3);
    assert!(!m
        .cells
        .iter()
        .any(|c| c.model == "resnet50" && c.engine == "torch-cpu"));
    assert!(!m.cells.iter().any(|c| c.batch_size == 32
        && c.image_size
            == Some(ImageSize {
                height: 32,
                width: 48
            })));
    assert!(m.cells.iter().enumerate().all(|(i, c)| c.index == i));
    assert_eq!(m.cell(8).unwrap().index, 8);
    assert!(m.cell(9).unwrap_err().to_string().contains("0 to 8"));
}

#[test]
fn unknown_keys_are_errors_naming_the_key() {
    let e = err("modles = [\"resnet18\"]\nmodels = [\"resnet18\"]\nengines = [\"burn-flex\"]");
    assert!(e.contains("modles"), "{e}");
    let e = err(
        "models = [\"resnet18\"]\nengines = [\"burn-flex\"]\n[[exclude]]\nmodels = \"resnet18\"",
    );
    assert!(e.contains("models") && e.contains("unknown field"), "{e}");
}

#[test]
fn unknown_models_and_engines_are_named() {
    let e = err("models = [\"resnet181\"]\nengines = [\"burn-flex\"]");
    assert!(e.contains("`models`") && e.contains("resnet181"), "{e}");
    let e = err("models = [\"resnet18\"]\nengines = [\"burn-flux\"]");
    assert!(
        e.contains("`engines`") && e.contains("burn-flux") && e.contains("torch-cpu"),
        "{e}"
    );
    let e = err("models = [\"resnet18\"]\nengines = [\"burn-flex\"]\nmodes = [\"trian\"]");
    assert!(e.contains("modes") && e.contains("trian"), "{e}");
}

#[test]
fn empty_axes_and_empty_products_are_errors_naming_the_key() {
    for key in [
        "models",
        "engines",
        "batch_sizes",
        "image_sizes",
        "modes",
        "precisions",
    ] {
        let mut body = String::from("models = [\"resnet18\"]\nengines = [\"burn-flex\"]\n");
        body = body
            .lines()
            .filter(|l| !l.starts_with(&format!("{key} ")))
            .map(|l| format!("{l}\n"))
            .collect();
        body.push_str(&format!("{key} = []\n"));
        let e = err(&body);
        assert!(e.contains(&format!("`{key}` is empty")), "{key}: {e}");
    }
    let e = err(
        "models = [\"resnet18\"]\nengines = [\"burn-flex\"]\n[[exclude]]\nengine = \"burn-flex\"",
    );
    assert!(e.contains("every cell is excluded"), "{e}");
}

#[test]
fn bad_exclusions_and_values_are_named() {
    let base = "models = [\"resnet18\", \"resnet34\"]\nengines = [\"burn-flex\", \"torch-cpu\"]\n";
    let e = err(&format!("{base}[[exclude]]\nmodel = \"resnet50\""));
    assert!(
        e.contains("exclude entry 1") && e.contains("resnet50") && e.contains("`models`"),
        "{e}"
    );
    let e = err(&format!(
        "{base}[[exclude]]\nengine = \"burn-flex\"\n[[exclude]]\n"
    ));
    assert!(
        e.contains("exclude entry 2") && e.contains("names no key"),
        "{e}"
    );
    let e = err(&format!("{base}[[exclude]]\nbatch_size = 32"));
    assert!(
        e.contains("batch_size 32") && e.contains("`batch_sizes`"),
        "{e}"
    );
    let e = err(&format!("{base}batch_sizes = [16, 16]"));
    assert!(e.contains("`batch_sizes` lists 16 twice"), "{e}");
    let e = err(&format!("{base}batch_sizes = [0]"));
    assert!(e.contains("`batch_sizes`"), "{e}");
    let e = err(&format!("{base}image_sizes = [\"32x\"]"));
    assert!(e.contains("`image_sizes`") && e.contains("32x"), "{e}");
    let e = err(&format!("{base}passes = 0"));
    assert!(e.contains("`passes`"), "{e}");
    let e = err(&format!("{base}min_time = 5.0\nmax_time = 1.0"));
    assert!(e.contains("`min_time`") && e.contains("max_time"), "{e}");
    let e = err("models = [\"alexnet\"]\nengines = [\"burn-flex\"]\nimage_sizes = [32]");
    assert!(e.contains("alexnet cannot take a 32×32 image"), "{e}");
}

/// `[engine_settings.ENGINE]`: a value sets it for the engine's cells, a list is an
/// axis of them; other engines' cells are untouched; the spec carries the settings.
#[test]
fn an_engine_setting_list_is_an_axis_of_that_engines_cells() {
    let m = Matrix::parse(
        r#"format = "cnnbench-matrix"
version = 1
models = ["resnet18"]
engines = ["burn-flex", "openvino-cpu"]
modes = ["infer"]
precisions = ["f32", "bf16"]

[engine_settings.openvino-cpu]
hint = ["latency", "throughput"]
streams = 2
"#,
        &["burn-flex", "openvino-cpu"],
    )
    .unwrap();
    // burn-flex × 2 precisions, openvino-cpu × 2 hints × 2 precisions.
    assert_eq!(m.cells.len(), 2 + 4);
    assert!(m.cells[..2].iter().all(|c| c.settings.is_empty()));
    let ov: Vec<(String, Precision)> = m.cells[2..]
        .iter()
        .map(|c| (c.settings["hint"].clone(), c.precision))
        .collect();
    assert_eq!(
        ov,
        vec![
            ("latency".into(), Precision::F32),
            ("latency".into(), Precision::Bf16),
            ("throughput".into(), Precision::F32),
            ("throughput".into(), Precision::Bf16),
        ]
    );
    assert!(m.cells[2..].iter().all(|c| c.settings["streams"] == "2"));
    let spec = m.spec(&m.cells[4]);
    assert_eq!(spec.engine_options.settings["hint"], "throughput");
    assert!(m.cells[4]
        .describe()
        .contains("openvino-cpu hint=throughput streams=2"));
}

/// An exclude entry names values of an engine's setting axes with the engine: the
/// cells of that engine with those values go (a stack that cannot run a precision
/// under one setting, as pytorch-compile's int8 without freezing); an entry that
/// names no engine, a setting that is no axis, or a value not on it, is refused.
#[test]
fn an_engine_setting_axis_can_be_excluded_from_with_its_engine() {
    let base = r#"format = "cnnbench-matrix"
version = 1
models = ["resnet18"]
engines = ["burn-flex", "openvino-cpu"]
modes = ["infer"]
precisions = ["f32", "int8"]

[engine_settings.openvino-cpu]
hint = ["latency", "throughput"]
streams = 2
"#;
    let parse = |extra: &str| {
        Matrix::parse(&format!("{base}{extra}"), &["burn-flex", "openvino-cpu"])
            .map_err(|e| e.to_string())
    };
    let m = parse(
        "[[exclude]]\nengine = \"openvino-cpu\"\nprecision = \"int8\"\nengine_settings = { hint = \"throughput\" }\n",
    )
    .unwrap();
    let ov: Vec<(String, Precision)> = m
        .cells
        .iter()
        .filter(|c| c.engine == "openvino-cpu")
        .map(|c| (c.settings["hint"].clone(), c.precision))
        .collect();
    assert_eq!(
        ov,
        vec![
            ("latency".into(), Precision::F32),
            ("latency".into(), Precision::Int8),
            ("throughput".into(), Precision::F32),
        ]
    );
    assert_eq!(m.cells.len(), 2 + 3);
    let e = parse("[[exclude]]\nengine_settings = { hint = \"throughput\" }\n").unwrap_err();
    assert!(
        e.contains("exclude entry 1") && e.contains("give `engine` too"),
        "{e}"
    );
    let e = parse("[[exclude]]\nengine = \"openvino-cpu\"\nengine_settings = { streams = 2 }\n")
        .unwrap_err();
    assert!(
        e.contains("`engine_settings.openvino-cpu.streams` is not a list"),
        "{e}"
    );
    let e = parse(
        "[[exclude]]\nengine = \"openvino-cpu\"\nengine_settings = { hint = \"cumulative\" }\n",
    )
    .unwrap_err();
    assert!(
        e.contains("cumulative") && e.contains("would exclude nothing"),
        "{e}"
    );
    let e =
        parse("[[exclude]]\nengine = \"burn-flex\"\nengine_settings = { hint = \"latency\" }\n")
            .unwrap_err();
    assert!(
        e.contains("`engine_settings.burn-flex.hint` is not a list"),
        "{e}"
    );
}

#[test]
fn engine_settings_for_no_engine_of_the_matrix_or_empty_axes_are_refused() {
    let base = "models = [\"resnet18\"]\nengines = [\"burn-flex\"]\n";
    let e = err(&format!("{base}[engine_settings.torch-cpu]\nthreads = 2"));
    assert!(
        e.contains("`engine_settings.torch-cpu`") && e.contains("not in `engines`"),
        "{e}"
    );
    let e = err(&format!("{base}[engine_settings.burn-flex]\nhint = []"));
    assert!(e.contains("`hint` is an empty list"), "{e}");
    let e = err(&format!(
        "{base}[engine_settings.burn-flex]\nhint = [\"a\", \"a\"]"
    ));
    assert!(e.contains("`hint` lists a twice"), "{e}");
}

/// The matrix has no defaults of its own: a cell of a matrix that gives nothing but
/// its axes is `cnnbench run`'s spec for that model and engine.
#[test]
fn a_cell_of_a_bare_matrix_is_runs_default_spec() {
    let m = parse("models = [\"resnet18\"]\nengines = [\"burn-flex\"]").unwrap();
    let run = RunSpec::new(
        vec![ModelRef::Zoo {
            name: "resnet18".into(),
        }],
        "burn-flex",
    );
    assert_eq!(m.spec(&m.cells[0]), run);
    assert_eq!((run.passes, run.warmup, run.seed), (10, 1, 0));
    assert_eq!(run.batch, Batches::Sizes(vec![16]));
    assert_eq!((run.mode, run.precision), (Mode::Train, Precision::F32));
}

/// Every run setting a matrix may give reaches the cell's spec.
#[test]
fn every_run_setting_reaches_the_cells_spec() {
    let m = parse(
        r#"models = ["resnet18"]
engines = ["burn-flex"]
passes = 3
warmup = 2
seed = 7
threads = 2
min_time = 1.5
max_time = 9
target_ci = 4.0
warmup_time = 0.5
memory_limit = "512MiB"
repeat = 3
cudnn_benchmark = true
tf32 = true
channels_last = true"#,
    )
    .unwrap();
    let spec = m.spec(&m.cells[0]);
    assert_eq!((spec.passes, spec.warmup, spec.seed), (3, 2, 7));
    assert_eq!(spec.threads, Some(2));
    assert_eq!(
        (
            spec.min_time_s,
            spec.max_time_s,
            spec.target_ci_pct,
            spec.warmup_time_s
        ),
        (Some(1.5), Some(9.0), Some(4.0), Some(0.5))
    );
    assert_eq!(spec.memory_limit_bytes, Some(512 << 20));
    assert_eq!(spec.repeat, 3);
    let o = &spec.engine_options;
    assert!(o.cudnn_benchmark && o.tf32 && o.channels_last);
    assert_eq!(spec.precision, Precision::Tf32);
    assert_eq!(m.allocator, None);
    assert_eq!(spec.allocator, "keep");
    // The heap policy: one for the matrix, a policy `run` knows.
    let m = parse("models = [\"resnet18\"]\nengines = [\"burn-flex\"]\nallocator = \"system\"")
        .unwrap();
    assert_eq!(m.allocator.as_deref(), Some("system"));
    assert_eq!(m.spec(&m.cells[0]).allocator, "system");
    let e = err("models = [\"resnet18\"]\nengines = [\"burn-flex\"]\nallocator = \"jemalloc\"");
    assert!(e.contains("jemalloc") && e.contains("`allocator`"), "{e}");
    // Bytes as a number; text the way `run --memory-limit` takes it, or refused.
    let m = parse("models = [\"resnet18\"]\nengines = [\"burn-flex\"]\nmemory_limit = 1000000")
        .unwrap();
    assert_eq!(m.spec(&m.cells[0]).memory_limit_bytes, Some(1_000_000));
    let e = err("models = [\"resnet18\"]\nengines = [\"burn-flex\"]\nmemory_limit = \"lots\"");
    assert!(
        e.contains("memory_limit = \"lots\"") && e.contains("512MiB"),
        "{e}"
    );
    // A value of the wrong type says what it should be, and where.
    let e = err("models = [\"resnet18\"]\nengines = [\"burn-flex\"]\npasses = \"ten\"");
    assert!(
        e.contains("passes = \"ten\"") && e.contains("expected usize"),
        "{e}"
    );
    let e = err("models = [\"resnet18\"]\nengines = [\"burn-flex\"]\nthreads = [1, \"two\"]");
    assert!(e.contains("\"two\"") && e.contains("expected usize"), "{e}");
    // A seed may be any u64.
    let m =
        parse("models = [\"resnet18\"]\nengines = [\"burn-flex\"]\nseed = [18446744073709551615]")
            .unwrap();
    assert_eq!(m.spec(&m.cells[0]).seed, u64::MAX);
}

/// A run setting given as a list is an axis that varies fastest, so a file without
/// one numbers its cells as before (the documented example's numbering, which
/// `docs/src/cluster.md` shows).
#[test]
fn a_run_setting_list_is_an_axis_after_the_others() {
    let documented = include_str!("../../../../docs/src/cluster/matrix.toml");
    let m = Matrix::parse(documented, ENGINES).unwrap();
    let cells: Vec<(&str, &str, usize)> = m
        .cells
        .iter()
        .map(|c| (c.model.as_str(), c.engine.as_str(), c.batch_size))
        .collect();
    assert_eq!(
        cells,
        [
            ("resnet18", "burn-flex", 16),
            ("resnet18", "burn-flex", 32),
            ("resnet18", "torch-cpu", 16),
            ("resnet18", "torch-cpu", 32),
            ("resnet50", "burn-flex", 16),
            ("resnet50", "torch-cpu", 16),
            ("resnet50", "torch-cpu", 32),
        ]
    );
    assert!(m.cells.iter().all(|c| c.listed.is_empty()));
    // threads × repeat as axes: each cell of the file becomes four, in place.
    let with_axes = Matrix::parse(
        &documented.replacen(
            "passes = 10",
            "passes = 10\nthreads = [1, 2]\nrepeat = [1, 3]",
            1,
        ),
        ENGINES,
    )
    .unwrap();
    assert_eq!(with_axes.cells.len(), 4 * m.cells.len());
    for (i, c) in with_axes.cells.iter().enumerate() {
        let before = &m.cells[i / 4];
        assert_eq!(
            (&c.model, &c.engine, c.batch_size),
            (&before.model, &before.engine, before.batch_size)
        );
        let threads = [1, 1, 2, 2][i % 4];
        let repeat = [1, 3, 1, 3][i % 4];
        assert_eq!(
            listed(c),
            [format!("threads {threads}"), format!("repeat {repeat}")]
        );
        let spec = with_axes.spec(c);
        assert_eq!((spec.threads, spec.repeat), (Some(threads), repeat));
        assert_eq!(spec.passes, 10);
    }
    assert!(
        with_axes.cells[3]
            .describe()
            .ends_with("batch 16, f32, threads 2, repeat 3"),
        "{}",
        with_axes.cells[3].describe()
    );
}

/// A cell `cnnbench run` would refuse is refused with the file, naming the cell and
/// the key; a list is an axis like the others (not empty, nothing twice).
#[test]
fn a_cell_whose_spec_run_refuses_is_refused_naming_the_key() {
    let base = "models = [\"resnet18\"]\nengines = [\"burn-flex\"]\n";
    let e = err(&format!("{base}repeat = 0"));
    assert!(e.contains("cell 0") && e.contains("`repeat`"), "{e}");
    let e = err(&format!("{base}threads = [2, 0]"));
    assert!(e.contains("cell 1 (") && e.contains("`threads`"), "{e}");
    let e = err(&format!("{base}target_ci = 2.0\nmin_time = 90.0"));
    assert!(e.contains("`min_time`"), "{e}");
    let e = err(&format!("{base}passes = []"));
    assert!(e.contains("`passes` is empty"), "{e}");
    let e = err(&format!("{base}repeat = [2, 2]"));
    assert!(e.contains("`repeat` lists 2 twice"), "{e}");
    // `tf32` is for the f32 cells: the others keep their precision.
    let m = parse(&format!(
        "{base}precisions = [\"f32\", \"bf16\"]\ntf32 = true"
    ))
    .unwrap();
    assert_eq!(m.spec(&m.cells[0]).precision, Precision::Tf32);
    let bf16 = m.spec(&m.cells[1]);
    assert_eq!(bf16.precision, Precision::Bf16);
    assert!(!bf16.engine_options.tf32);
}

/// Every run setting given as a list is an axis an `[[exclude]]` entry can name;
/// a value not in the list, or a key that is no list, is refused.
#[test]
fn every_run_setting_axis_can_be_excluded_from() {
    let keys = [
        ("passes", "[1, 2]", "1"),
        ("warmup", "[0, 1]", "0"),
        ("seed", "[1, 2]", "1"),
        ("threads", "[1, 2]", "1"),
        ("min_time", "[1.0, 2.0]", "1.0"),
        ("max_time", "[1.0, 2.0]", "1"),
        ("target_ci", "[1.0, 2.0]", "1.0"),
        ("warmup_time", "[1.0, 2.0]", "1.0"),
        ("memory_limit", "[\"1MiB\", 2000000]", "1048576"),
        ("repeat", "[1, 2]", "1"),
        ("calibration", "[4, 8]", "4"),
        ("cudnn_benchmark", "[false, true]", "false"),
        ("tf32", "[false, true]", "false"),
        ("channels_last", "[false, true]", "false"),
    ];
    let base = "models = [\"resnet18\"]\nengines = [\"burn-flex\"]\n";
    for (key, list, excluded) in keys {
        let m = parse(&format!(
            "{base}{key} = {list}\n[[exclude]]\n{key} = {excluded}"
        ))
        .unwrap_or_else(|e| panic!("{key}: {e}"));
        assert_eq!(m.cells.len(), 1, "{key}");
        assert_eq!(m.cells[0].listed.len(), 1, "{key}");
        assert_eq!(m.cells[0].listed[0].0, key);
        assert_eq!(m.cells[0].index, 0);
    }
    // Every key the file takes as a run setting is listed above.
    let run_settings: Vec<&str> = keys::KEYS
        .iter()
        .filter(|k| k.reach == keys::Reach::Every)
        .map(|k| k.name)
        .collect();
    let given: Vec<&str> = keys.iter().map(|(k, _, _)| *k).collect();
    assert_eq!(given, run_settings);
    let e = err(&format!("{base}threads = [1, 2]\n[[exclude]]\nthreads = 3"));
    assert!(e.contains("threads 3 is not in `threads`"), "{e}");
    let e = err(&format!("{base}threads = 2\n[[exclude]]\nthreads = 2"));
    assert!(e.contains("`threads` is not a list"), "{e}");
    // With the other keys: resnet18 at threads 2 only.
    let m = parse(
        "models = [\"resnet18\", \"resnet34\"]\nengines = [\"burn-flex\"]\nthreads = [1, 2]\n[[exclude]]\nmodel = \"resnet18\"\nthreads = 1",
    )
    .unwrap();
    let left: Vec<(&str, Vec<String>)> = m
        .cells
        .iter()
        .map(|c| (c.model.as_str(), listed(c)))
        .collect();
    assert_eq!(
        left,
        [
            ("resnet18", vec!["threads 2".to_string()]),
            ("resnet34", vec!["threads 1".to_string()]),
            ("resnet34", vec!["threads 2".to_string()]),
        ]
    );
}

/// The scenario and its lists vary fastest, after the run settings, so a file
/// without them numbers its cells as before (the documented example's numbering).
#[test]
fn a_scenario_and_its_lists_are_axes_after_the_run_settings() {
    let documented = include_str!("../../../../docs/src/cluster/matrix.toml").replacen(
        "modes = [\"train\"]",
        "modes = [\"infer\"]",
        1,
    );
    let m = Matrix::parse(&documented, ENGINES).unwrap();
    assert!(m.cells.iter().all(|c| c.scenario.is_none()));
    let with_axes = Matrix::parse(
        &documented.replacen(
            "passes = 10",
            "passes = 10\nthreads = [1, 2]\nscenario = \"offline\"\nin_flight = [1, 2]\nmin_queries = 64",
            1,
        ),
        ENGINES,
    )
    .unwrap();
    assert_eq!(with_axes.cells.len(), 4 * m.cells.len());
    for (i, c) in with_axes.cells.iter().enumerate() {
        let before = &m.cells[i / 4];
        // Offline keeps the matrix's batch sizes.
        assert_eq!(
            (&c.model, &c.engine, c.batch_size),
            (&before.model, &before.engine, before.batch_size)
        );
        let threads = [1, 1, 2, 2][i % 4];
        let in_flight = [1, 2, 1, 2][i % 4];
        assert_eq!(
            listed(c),
            [
                format!("threads {threads}"),
                format!("in_flight {in_flight}")
            ]
        );
        let spec = with_axes.spec(c);
        let scenario = spec.scenario.expect("the cell's scenario");
        assert_eq!(
            scenario,
            ScenarioSpec {
                in_flight,
                min_queries: 64,
                ..ScenarioSpec::new(ScenarioKind::Offline)
            }
        );
        assert_eq!(spec.threads, Some(threads));
    }
    assert!(
        with_axes.cells[3]
            .describe()
            .ends_with("batch 16, f32, threads 2, scenario offline, in_flight 2"),
        "{}",
        with_axes.cells[3].describe()
    );
}

/// Every scenario key reaches the spec of the cells whose scenario takes it; each
/// scenario starts from its own defaults, and a query scenario's batch is a query's
/// samples when the matrix gives no `batch_sizes`.
#[test]
fn each_scenario_key_reaches_the_scenarios_that_take_it() {
    let m = parse(
        r#"models = ["resnet18"]
engines = ["burn-flex"]
modes = ["infer"]
scenario = ["single-stream", "multi-stream", "server", "offline"]
samples_per_query = 4
qps = [10, 20.5]
latency_bound = [15, 30]
in_flight = 2
scenario_time = 0.5
min_queries = 600
find_peak = true"#,
    )
    .unwrap();
    // single-stream 1, multi-stream 1, server 2 qps × 2 bounds, offline 1.
    let kinds: Vec<(ScenarioKind, usize)> = m
        .cells
        .iter()
        .map(|c| (c.scenario.as_ref().unwrap().kind, c.batch_size))
        .collect();
    assert_eq!(
        kinds,
        [
            (ScenarioKind::SingleStream, 1),
            (ScenarioKind::MultiStream, 4),
            (ScenarioKind::Server, 1),
            (ScenarioKind::Server, 1),
            (ScenarioKind::Server, 1),
            (ScenarioKind::Server, 1),
            (ScenarioKind::Offline, 16),
        ]
    );
    let common = |kind| ScenarioSpec {
        min_duration_s: 0.5,
        min_queries: 600,
        ..ScenarioSpec::new(kind)
    };
    let specs: Vec<ScenarioSpec> = m
        .cells
        .iter()
        .map(|c| m.spec(c).scenario.unwrap())
        .collect();
    assert_eq!(specs[0], common(ScenarioKind::SingleStream));
    assert_eq!(
        specs[1],
        ScenarioSpec {
            samples_per_query: 4,
            ..common(ScenarioKind::MultiStream)
        }
    );
    let server = |qps, ms| ScenarioSpec {
        target_qps: Some(qps),
        latency_bound_ms: Some(ms),
        find_peak: true,
        in_flight: 2,
        ..common(ScenarioKind::Server)
    };
    assert_eq!(
        specs[2..6],
        [
            server(10.0, 15.0),
            server(10.0, 30.0),
            server(20.5, 15.0),
            server(20.5, 30.0)
        ]
    );
    assert_eq!(
        specs[6],
        ScenarioSpec {
            in_flight: 2,
            ..common(ScenarioKind::Offline)
        }
    );
    assert_eq!(
        listed(&m.cells[3]),
        ["scenario server", "qps 10", "latency_bound 30"]
    );
    assert!(
        m.cells[3]
            .describe()
            .ends_with("infer, batch 1, f32, scenario server, qps 10, latency_bound 30"),
        "{}",
        m.cells[3].describe()
    );
    // The spec is the run's own: the scenario's batch, every other field run's.
    let spec = m.spec(&m.cells[1]);
    assert_eq!(spec.batch, Batches::Sizes(vec![4]));
    assert_eq!(spec.validate(), Ok(()));
    assert_eq!(m.base.scenario, None);
}

/// A scenario key the matrix cannot use is refused naming it: without `scenario`,
/// for no scenario of the matrix, with a mode that is not inference, or a value
/// `cnnbench run` would refuse (naming the cell and the matrix's key).
#[test]
fn scenario_keys_that_cannot_be_run_are_refused_naming_the_key() {
    let base = "models = [\"resnet18\"]\nengines = [\"burn-flex\"]\n";
    let infer = format!("{base}modes = [\"infer\"]\n");
    let server = format!("{infer}scenario = \"server\"\nlatency_bound = 15\n");
    let e = err(&format!("{infer}qps = 100"));
    assert!(
        e.contains("`qps`") && e.contains("the matrix gives no `scenario`"),
        "{e}"
    );
    let e = err(&format!("{infer}scenario = \"offline\"\nqps = [100, 200]"));
    assert!(
        e.contains("`qps`: it is a setting of the server scenario")
            && e.contains("`scenario` is offline: it would reach no cell"),
        "{e}"
    );
    let e = err(&format!(
        "{infer}scenario = [\"single-stream\", \"server\"]\nsamples_per_query = 2\nqps = 1\nlatency_bound = 1"
    ));
    assert!(
        e.contains("`samples_per_query`")
            && e.contains("multi-stream scenario")
            && e.contains("single-stream, server"),
        "{e}"
    );
    let e = err(&format!("{base}scenario = \"single-stream\""));
    assert!(
        e.contains("`scenario`")
            && e.contains("modes include train")
            && e.contains("modes = [\"infer\"]"),
        "{e}"
    );
    let e = err(&format!(
        "{base}modes = [\"infer\", \"step\"]\nscenario = \"offline\""
    ));
    assert!(e.contains("modes include step"), "{e}");
    let e = err(&format!("{infer}scenario = \"server\"\nqps = 100"));
    assert!(
        e.contains("cell 0 (")
            && e.contains("--latency-bound")
            && e.contains("(in the matrix: `scenario`, `latency_bound`)"),
        "{e}"
    );
    let e = err(&format!("{server}qps = [100, 0]"));
    assert!(e.contains("cell 1 (") && e.contains("`qps`"), "{e}");
    let e = err(&format!("{server}qps = 10\nin_flight = 65"));
    assert!(
        e.contains("--in-flight 65") && e.contains("`in_flight`"),
        "{e}"
    );
    let e = err(&format!("{server}qps = 10\nscenario_time = -1"));
    assert!(
        e.contains("`scenario_time`") && !e.contains("`scenario`,"),
        "{e}"
    );
    let e = err(&format!("{server}find_peak = true\nmin_queries = 10"));
    assert!(
        e.contains("`find_peak`") && e.contains("`min_queries`"),
        "{e}"
    );
    let e = err(&format!(
        "{infer}scenario = \"multi-stream\"\nsamples_per_query = 0"
    ));
    assert!(e.contains("`samples_per_query`"), "{e}");
    // Given batch sizes are kept, and must be a query's samples.
    let e = err(&format!("{server}qps = 10\nbatch_sizes = [1, 2]"));
    assert!(
        e.contains("cell 1 (")
            && e.contains("a server query's 1 sample(s)")
            && e.contains("`batch_sizes` gives 2"),
        "{e}"
    );
    let e = err(&format!(
        "{infer}scenario = \"multi-stream\"\nbatch_sizes = [4]"
    ));
    assert!(e.contains("set `samples_per_query`"), "{e}");
    let m = parse(&format!(
        "{infer}scenario = \"multi-stream\"\nbatch_sizes = [4]\nsamples_per_query = 4"
    ))
    .unwrap();
    assert_eq!(m.spec(&m.cells[0]).batch, Batches::Sizes(vec![4]));
    let e = err(&format!("{server}qps = 10\nmin_time = 1.0"));
    assert!(e.contains("`min_time`"), "{e}");
    // Lists are axes like the others: not empty, nothing twice, each value typed.
    let e = err(&format!("{infer}scenario = []"));
    assert!(e.contains("`scenario` is empty"), "{e}");
    let e = err(&format!("{infer}scenario = [\"offline\", \"offline\"]"));
    assert!(e.contains("`scenario` lists offline twice"), "{e}");
    let e = err(&format!("{server}qps = [5, 5.0]"));
    assert!(e.contains("`qps` lists 5 twice"), "{e}");
    let e = err(&format!("{infer}scenario = \"sever\""));
    assert!(e.contains("sever") && e.contains("scenario"), "{e}");
    let e = err(&format!("{server}qps = 10\nsamples_per_query = [1, 2]"));
    assert!(e.contains("samples_per_query"), "{e}");
}

/// `scenario`, `qps`, `latency_bound` and `in_flight` as lists are axes an
/// `[[exclude]]` entry can name; a value not listed, or a key that is no list, is
/// refused.
#[test]
fn every_scenario_axis_can_be_excluded_from() {
    let base =
        "models = [\"resnet18\", \"resnet34\"]\nengines = [\"burn-flex\"]\nmodes = [\"infer\"]\n";
    let m = parse(&format!(
        "{base}scenario = [\"server\", \"offline\"]\nqps = [10, 20]\nlatency_bound = [5, 50]\nin_flight = [1, 2]\n[[exclude]]\nscenario = \"offline\"\nin_flight = 2\n[[exclude]]\nmodel = \"resnet34\"\nqps = 20\n[[exclude]]\nlatency_bound = 5\n"
    ))
    .unwrap();
    // Per model: server 2 × 2 × 2 and offline 2, less offline at 2 in flight, the
    // bound 5, and for resnet34 20 qps.
    let left: Vec<(&str, String)> = m
        .cells
        .iter()
        .map(|c| (c.model.as_str(), listed(c).join(", ")))
        .collect();
    let server = |qps, in_flight| {
        format!("scenario server, qps {qps}, latency_bound 50, in_flight {in_flight}")
    };
    let offline = "scenario offline, in_flight 1".to_string();
    assert_eq!(
        left,
        [
            ("resnet18", server(10, 1)),
            ("resnet18", server(10, 2)),
            ("resnet18", server(20, 1)),
            ("resnet18", server(20, 2)),
            ("resnet18", offline.clone()),
            ("resnet34", server(10, 1)),
            ("resnet34", server(10, 2)),
            ("resnet34", offline),
        ]
    );
    assert!(m.cells.iter().enumerate().all(|(i, c)| c.index == i));
    let server = format!("{base}scenario = \"server\"\nlatency_bound = 15\n");
    let e = err(&format!("{server}qps = [10, 20]\n[[exclude]]\nqps = 30"));
    assert!(
        e.contains("exclude entry 1") && e.contains("qps 30 is not in `qps`"),
        "{e}"
    );
    let e = err(&format!("{server}qps = 10\n[[exclude]]\nqps = 10"));
    assert!(e.contains("`qps` is not a list"), "{e}");
    let e = err(&format!(
        "{server}qps = [10, 20]\n[[exclude]]\nscenario = \"server\""
    ));
    assert!(e.contains("`scenario` is not a list"), "{e}");
    let e = err(&format!("{server}qps = 10\n[[exclude]]\nscenario_time = 1"));
    assert!(e.contains("`scenario_time` is not a list"), "{e}");
}

/// A flag is named by its matrix key where it stands as a word.
#[test]
fn refusals_name_the_matrix_keys_of_the_flags_they_name() {
    let m = with_matrix_keys("--scenario-time must be a number of seconds".into());
    assert!(m.ends_with("(in the matrix: `scenario_time`)"), "{m}");
    let m = with_matrix_keys("-b and --samples-per-query must agree".into());
    assert!(
        m.ends_with("(in the matrix: `batch_sizes`, `samples_per_query`)"),
        "{m}"
    );
    let m = with_matrix_keys("--latency-bound must be positive".into());
    assert!(m.ends_with("(in the matrix: `latency_bound`)"), "{m}");
}

#[test]
fn the_format_and_version_are_required_and_checked() {
    let body = "models = [\"resnet18\"]\nengines = [\"burn-flex\"]\n";
    let e = Matrix::parse(body, ENGINES).unwrap_err().to_string();
    assert!(e.contains("format = \"cnnbench-matrix\""), "{e}");
    let e = Matrix::parse(
        &format!("format = \"cnnbench-matrix\"\nversion = 2\n{body}"),
        ENGINES,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("version 2"), "{e}");
    let e = Matrix::parse(
        &format!("format = \"cnnbench-model\"\nversion = 1\n{body}"),
        ENGINES,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("cnnbench-model"), "{e}");
}

/// Any key of a cell may be a list, an axis, and each reaches the spec of the cells
/// whose scenario takes it: here the batcher's and the scenario's time, which a matrix
/// could once give only as one value.
#[test]
fn any_key_of_a_cell_may_be_a_list() {
    let m = parse(
        r#"models = ["resnet18"]
engines = ["burn-flex"]
modes = ["infer"]
scenario = "server"
qps = 50
latency_bound = 100
scenario_time = [1, 2.5]
max_batch = [2, 4]
batch_timeout = 0.5"#,
    )
    .unwrap();
    let cells: Vec<(f64, Option<BatcherSpec>)> = m
        .cells
        .iter()
        .map(|c| {
            let s = m.spec(c).scenario.unwrap();
            (s.min_duration_s, s.batcher)
        })
        .collect();
    let batcher = |max_batch| {
        Some(BatcherSpec {
            max_batch,
            timeout_ms: 0.5,
        })
    };
    assert_eq!(
        cells,
        [
            (1.0, batcher(2)),
            (1.0, batcher(4)),
            (2.5, batcher(2)),
            (2.5, batcher(4))
        ]
    );
    assert_eq!(
        listed(&m.cells[1]),
        ["scenario_time 1", "max_batch 4"],
        "{:?}",
        m.cells[1]
    );
    assert!(m.cells[3]
        .describe()
        .ends_with("scenario server, scenario_time 2.5, max_batch 4"));
    // The batcher's timeout needs the batcher; a list of lists is no value.
    let infer = "models = [\"resnet18\"]\nengines = [\"burn-flex\"]\nmodes = [\"infer\"]\n";
    let e = err(&format!(
        "{infer}scenario = \"server\"\nqps = 5\nlatency_bound = 100\nbatch_timeout = 1"
    ));
    assert!(
        e.contains("cell 0") && e.contains("give `max_batch` too"),
        "{e}"
    );
    let e = err(&format!("{infer}threads = [[1, 2]]"));
    assert!(
        e.contains("threads = [[1, 2]]") && e.contains("expected usize"),
        "{e}"
    );
    // No run takes nan or an infinity (JSON, which holds a cell's values, has neither).
    let e = err(&format!("{infer}min_time = nan"));
    assert!(e.contains("`min_time`") && e.contains("nan"), "{e}");
    // An exclusion names one value of a list, never a list.
    let e = err(&format!(
        "{infer}threads = [1, 2]\n[[exclude]]\nthreads = [1]"
    ));
    assert!(
        e.contains("threads = [1]") && e.contains("expected usize"),
        "{e}"
    );
}

/// The one list of a cell's keys ([`keys::KEYS`]) names every field of [`CellKeys`],
/// each once, so that a new field cannot miss its place in the order of the cells.
#[test]
fn every_field_of_a_cells_keys_is_in_the_list_of_keys() {
    let fields = match serde_json::to_value(CellKeys::default()) {
        Ok(serde_json::Value::Object(map)) => map,
        other => panic!("{other:?}"),
    };
    let mut names: Vec<&str> = keys::KEYS.iter().map(|k| k.name).collect();
    assert_eq!(names.len(), fields.len());
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), fields.len());
    assert!(names.iter().all(|n| fields.contains_key(*n)), "{names:?}");
    // An unknown key says what a matrix takes, its own keys and a cell's.
    let e = err("models = [\"resnet18\"]\nengines = [\"burn-flex\"]\nthread = 4");
    assert!(
        e.contains("unknown field `thread`") && e.contains("models") && e.contains("threads"),
        "{e}"
    );
}

/// A draft is written as TOML by serialisation and read back as the same matrix, names
/// and values holding quotes, brackets and newlines included.
#[test]
fn a_draft_is_read_back_as_the_matrix_it_describes() {
    let hostile = "a\"b]\n[[exclude]]\nengine = \"burn-flex\"";
    let mut draft = MatrixDraft::new(
        vec!["resnet18".into()],
        vec!["burn-flex".into(), "torch-cpu".into()],
    );
    draft.precisions = vec![Precision::F32, Precision::Bf16];
    draft.batch_sizes = Some(vec![1, 4]);
    draft.keys.seed = Some(u64::MAX);
    draft.keys.warmup = Some(2);
    draft.engine_settings.insert(
        "torch-cpu".into(),
        [(
            "hint".to_string(),
            vec!["plain".to_string(), hostile.to_string()],
        )]
        .into(),
    );
    draft.exclude.push(ExcludeDraft {
        engine: "torch-cpu".into(),
        precision: Precision::Bf16,
        engine_settings: [("hint".to_string(), hostile.to_string())].into(),
    });
    let text = draft.to_toml("Written by a test\nthreads = 99").unwrap();
    let m = Matrix::parse(&text, ENGINES).unwrap_or_else(|e| panic!("{e}\n{text}"));
    // burn-flex 2 precisions × 2 batches, torch-cpu 2 hints × 2 × 2 less one hint at bf16.
    assert_eq!(m.cells.len(), 4 + 8 - 2, "{text}");
    assert!(m.cells.iter().all(|c| c.mode == Mode::Infer));
    let spec = m.spec(&m.cells[0]);
    assert_eq!((spec.seed, spec.warmup, spec.threads), (u64::MAX, 2, None));
    let hints: Vec<&str> = m
        .cells
        .iter()
        .filter(|c| c.engine == "torch-cpu" && c.precision == Precision::Bf16)
        .map(|c| c.settings["hint"].as_str())
        .collect();
    assert_eq!(hints, ["plain", "plain"]);
    assert!(m
        .cells
        .iter()
        .any(|c| c.settings.get("hint").map(String::as_str) == Some(hostile)));
}
