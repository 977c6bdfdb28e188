//! The run spec on every path: a matrix cell, a rank and a probe child receive the spec
//! the parent had (serialised, then parsed as the child parses it), and the command
//! line's options reach it.

use super::job::{self, Delivery, Role};
use super::probe::probe_job;
use super::ranks::rank_job;
use super::spec::{self, Given};
use super::RunArgs;
use clap::{Args, FromArgMatches};
use cnnbench_engine::{Mode, Precision};
use cnnbench_results::scenario::{
    fewest_queries_for, Issuing, ScenarioKind, ScenarioSetting, ScenarioSpec, MAX_SCENARIO_QUERIES,
    MAX_SCENARIO_SECONDS,
};
use cnnbench_results::spec::DEFAULT_PASSES;
use cnnbench_results::{Batches, DataParallel, EngineSettings, ImageSize, ModelRef, RunSpec};
use proptest::prelude::*;

fn delivery() -> Delivery {
    Delivery {
        output: "out dir/with space".into(),
        label: Some("host-1".into()),
        json: false,
        quiet: true,
        force: false,
        require_clean: true,
        retries: 2,
        round: None,
    }
}

fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![Just(Mode::Train), Just(Mode::Infer), Just(Mode::Step)]
}

fn precision() -> impl Strategy<Value = Precision> {
    prop::sample::select(Precision::ALL.to_vec())
}

fn seconds() -> impl Strategy<Value = Option<f64>> {
    prop::option::of(0.001f64..1000.0)
}

fn image_size() -> impl Strategy<Value = ImageSize> {
    (32usize..300, 32usize..300).prop_map(|(height, width)| ImageSize { height, width })
}

fn model() -> impl Strategy<Value = ModelRef> {
    prop_oneof![
        prop::sample::select(vec!["resnet18", "alexnet", "vgg16", "mobilenet-v2"])
            .prop_map(|n| ModelRef::Zoo { name: n.into() }),
        ("[a-z /é.]{1,20}", "[0-9a-f]{64}").prop_map(|(path, sha256)| ModelRef::File {
            path: path.into(),
            sha256
        }),
    ]
}

prop_compose! {
    /// Any spec `validate` accepts.
    fn any_spec()(
        models in prop::collection::vec(model(), 1..4),
        engine in prop::sample::select(vec!["burn-flex", "torch-cpu", "torch-cuda", "candle", "pytorch-compile"]),
        own in prop::collection::btree_map("[a-z][a-z-]{0,11}", "[a-z0-9 /é.=\"]{0,20}", 0..4),
        device in prop::option::of(0usize..8),
        flags in prop::array::uniform4(any::<bool>()),
        mode in mode(),
        precision in precision(),
        batch in prop_oneof![
            prop::collection::vec(1usize..4096, 1..5).prop_map(Batches::Sizes),
            Just(Batches::Max)
        ],
        image_sizes in prop::option::of(prop::collection::vec(image_size(), 1..4)),
        warmup in 0usize..20,
        passes in 1usize..1000,
        (min_time_s, max_time_s, warmup_time_s) in (seconds(), seconds(), seconds()),
        target_ci_pct in prop::option::of(0.01f64..50.0),
        memory_limit_bytes in prop::option::of(1u64..(1 << 40)),
        seed in any::<u64>(),
        threads in prop::option::of(1usize..256),
        allocator in prop::sample::select(vec!["keep", "system"]),
        data_parallel in prop::option::of((prop::option::of(1usize..9), 1.0f64..3600.0)),
        scenario in prop::option::of((0usize..4, 1usize..64, 0.1f64..1e4, 0.1f64..1e3, 0.0f64..1e3, 1usize..1_000_000, any::<bool>())),
        calibration_images in prop::option::of(1usize..=1024),
    ) -> RunSpec {
        let mut spec = RunSpec {
            models,
            engine: engine.into(),
            engine_options: EngineSettings {
                device,
                allow_cpu_adapter: flags[0],
                cudnn_benchmark: flags[1],
                tf32: flags[2],
                channels_last: flags[3],
                settings: own,
            },
            mode,
            precision,
            batch,
            image_sizes,
            warmup,
            passes,
            min_time_s,
            max_time_s,
            target_ci_pct,
            warmup_time_s,
            memory_limit_bytes,
            seed,
            threads,
            allocator: allocator.into(),
            data_parallel: data_parallel.map(|(local_ranks, timeout_s)| DataParallel { local_ranks, timeout_s }),
            repeat: 1,
            scenario: scenario.map(|(kind, samples, qps, bound, time, queries, peak)| {
                let kind = ScenarioKind::ALL[kind];
                let server = kind.rules().issuing == Issuing::PoissonArrivals;
                let find_peak = server && peak;
                // A server's load asks for no more queries than a run keeps, arriving
                // within a day (validate refuses more).
                let (time, queries) = if server {
                    (
                        time.min(MAX_SCENARIO_QUERIES as f64 / qps / 2.0),
                        queries.min((qps * MAX_SCENARIO_SECONDS) as usize).max(1),
                    )
                } else {
                    (time, queries)
                };
                // A peak search needs runs that can be valid: enough queries to bound its
                // percentile (validate refuses fewer).
                let queries = match kind.percentile() {
                    Some(q) if find_peak => queries.max(fewest_queries_for(q)),
                    _ => queries,
                };
                ScenarioSpec {
                    samples_per_query: if kind.takes(ScenarioSetting::SamplesPerQuery) { samples } else { 1 },
                    target_qps: server.then_some(qps),
                    latency_bound_ms: server.then_some(bound),
                    min_duration_s: time,
                    min_queries: queries,
                    find_peak,
                    ..ScenarioSpec::new(kind)
                }
            }),
            calibration_images,
        };
        // What validate refuses, made valid rather than filtered (so every case runs):
        // `--tf32` is for f32 (which it makes tf32).
        if !matches!(spec.precision, Precision::F32 | Precision::Tf32) {
            spec.engine_options.tf32 = false;
        }
        spec.settle_tf32();
        if let (Some(min), Some(max)) = (spec.min_time_s, spec.effective_max_time_s()) {
            if min > max {
                spec.min_time_s = Some(max);
            }
        }
        if spec.data_parallel.is_some() {
            spec.min_time_s = None;
            spec.max_time_s = None;
            spec.target_ci_pct = None;
            spec.warmup_time_s = None;
            if spec.batch == Batches::Max {
                spec.batch = Batches::Sizes(vec![16]);
            }
            if spec.mode == Mode::Infer {
                spec.mode = Mode::Train;
            }
        }
        // A scenario serves inference in one process, a query's samples its batch.
        if let Some(scenario) = &spec.scenario {
            spec.mode = Mode::Infer;
            spec.passes = DEFAULT_PASSES;
            spec.data_parallel = None;
            spec.min_time_s = None;
            spec.max_time_s = None;
            spec.target_ci_pct = None;
            spec.batch = match (scenario.kind.rules().batch_is_the_query, &spec.batch) {
                (false, Batches::Sizes(sizes)) => Batches::Sizes(vec![sizes[0]]),
                _ => Batches::Sizes(vec![scenario.samples_per_query]),
            };
        }
        // int8 is inference in one process; a calibration count belongs to int8 alone.
        if spec.precision == Precision::Int8 {
            if spec.data_parallel.is_some() {
                spec.precision = Precision::F32;
            } else {
                spec.mode = Mode::Infer;
            }
        }
        if spec.precision != Precision::Int8 {
            spec.calibration_images = None;
        }
        spec
    }
}

/// What a child process does with its standard input.
fn as_the_child_reads_it(job: &job::Job) -> job::Job {
    job::decode(&job::encode(job).unwrap()).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_rank_receives_the_spec_of_the_run(spec in any_spec(), nproc in 1usize..9) {
        prop_assert_eq!(spec.validate(), Ok(()));
        let sent = rank_job(spec.clone(), delivery(), nproc);
        let received = as_the_child_reads_it(&sent);
        prop_assert_eq!(&received, &sent);
        prop_assert_eq!(received.role, Role::Rank);
        // Only a thread count is added, and only where none was given.
        let mut expected = spec.clone();
        expected.threads = spec.threads.or(received.spec.threads);
        prop_assert_eq!(received.spec, expected);
        prop_assert_eq!(received.delivery, delivery());
    }

    #[test]
    fn a_probe_receives_the_spec_of_its_point(spec in any_spec(), batch in 1usize..65536) {
        let model = spec.models[0].clone();
        let size = spec.image_sizes.as_ref().map(|s| s[0]);
        let sent = probe_job(&spec, &model, size, batch, std::path::Path::new("out"));
        let received = as_the_child_reads_it(&sent);
        prop_assert_eq!(&received, &sent);
        let s = received.spec;
        prop_assert_eq!(s.models, vec![model]);
        prop_assert_eq!(s.batch, Batches::Sizes(vec![batch]));
        prop_assert_eq!(s.image_sizes, size.map(|s| vec![s]));
        // The engine and what it computes are the run's; only the passes are the probe's.
        prop_assert_eq!(s.engine, spec.engine);
        prop_assert_eq!(s.engine_options, spec.engine_options);
        prop_assert_eq!((s.mode, s.precision, s.seed, s.threads), (spec.mode, spec.precision, spec.seed, spec.threads));
        prop_assert_eq!(s.allocator, spec.allocator);
        prop_assert_eq!((s.warmup, s.passes), (1, 1));
    }

    #[test]
    fn a_matrix_cell_runs_the_spec_the_matrix_describes(spec in any_spec()) {
        // What a matrix can say: zoo models, one of each axis, no data parallelism.
        let mut spec = spec;
        spec.models.truncate(1);
        if let ModelRef::File { .. } = spec.models[0] {
            spec.models[0] = ModelRef::Zoo { name: "resnet18".into() };
        }
        if let Batches::Max = spec.batch {
            spec.batch = Batches::Sizes(vec![8]);
        }
        if let Batches::Sizes(b) = &mut spec.batch {
            b.truncate(1);
        }
        if let Some(sizes) = spec.image_sizes.as_mut() {
            sizes.truncate(1);
        }
        spec.data_parallel = None;
        // A matrix sets the runs of a cell too (any spec's are 1: vary them here).
        spec.repeat = 1 + (spec.seed % 4) as usize;
        spec.engine_options.device = None;
        spec.engine_options.allow_cpu_adapter = false;
        spec.allocator = "keep".into();
        let ModelRef::Zoo { name } = &spec.models[0] else { unreachable!() };
        let Batches::Sizes(batch) = &spec.batch else { unreachable!() };
        let mut text = format!(
            "format = \"cnnbench-matrix\"\nversion = 1\nmodels = [\"{name}\"]\nengines = [\"{}\"]\nbatch_sizes = [{}]\nmodes = [\"{}\"]\nprecisions = [\"{}\"]\npasses = {}\nwarmup = {}\nseed = {}\ncudnn_benchmark = {}\ntf32 = {}\nchannels_last = {}\n",
            spec.engine, batch[0], spec.mode, spec.precision.as_str(), spec.passes, spec.warmup,
            spec.seed, spec.engine_options.cudnn_benchmark, spec.engine_options.tf32,
            spec.engine_options.channels_last,
        );
        if let Some(sizes) = &spec.image_sizes {
            text.push_str(&format!("image_sizes = [\"{}\"]\n", sizes[0]));
        }
        if let Some(t) = spec.threads {
            text.push_str(&format!("threads = {t}\n"));
        }
        if let Some(bytes) = spec.memory_limit_bytes {
            text.push_str(&format!("memory_limit = {bytes}\n"));
        }
        text.push_str(&format!("repeat = {}\n", spec.repeat));
        if let Some(images) = spec.calibration_images {
            text.push_str(&format!("calibration = {images}\n"));
        }
        for (key, value) in [
            ("min_time", spec.min_time_s),
            ("max_time", spec.max_time_s),
            ("target_ci", spec.target_ci_pct),
            ("warmup_time", spec.warmup_time_s),
        ] {
            if let Some(v) = value {
                text.push_str(&format!("{key} = {v:?}\n"));
            }
        }
        // The scenario's keys, those its kind takes (`any_spec` sets no others).
        if let Some(sc) = &spec.scenario {
            text.push_str(&format!(
                "scenario = \"{}\"\nscenario_time = {:?}\nmin_queries = {}\n",
                sc.kind, sc.min_duration_s, sc.min_queries
            ));
            if sc.kind.takes(ScenarioSetting::SamplesPerQuery) {
                text.push_str(&format!("samples_per_query = {}\n", sc.samples_per_query));
            }
            for (key, value) in [("qps", sc.target_qps), ("latency_bound", sc.latency_bound_ms)] {
                if let Some(v) = value {
                    text.push_str(&format!("{key} = {v:?}\n"));
                }
            }
            if sc.find_peak {
                text.push_str("find_peak = true\n");
            }
            if sc.in_flight != 1 {
                text.push_str(&format!("in_flight = {}\n", sc.in_flight));
            }
        }
        // The engine's own settings, under its name: a table, so last (JSON's string
        // escapes are TOML's).
        if !spec.engine_options.settings.is_empty() {
            text.push_str(&format!("[engine_settings.\"{}\"]\n", spec.engine));
            for (key, value) in &spec.engine_options.settings {
                let quoted = |t: &str| serde_json::to_string(t).unwrap();
                text.push_str(&format!("{} = {}\n", quoted(key), quoted(value)));
            }
        }
        let matrix = match cnnbench_plan::Matrix::parse(&text, &[spec.engine.as_str()]) {
            Ok(m) => m,
            // A size the zoo model cannot take is the matrix's refusal, not this test's.
            Err(cnnbench_plan::MatrixError::ModelSize { .. }) => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(format!("{e}\n{text}"))),
        };
        prop_assert_eq!(matrix.cells.len(), 1);
        prop_assert_eq!(matrix.spec(&matrix.cells[0]), spec);
    }
}

/// `run` as main builds it: the derived options and the engines' own flags.
fn run_command() -> clap::Command {
    crate::commands::args::with_engine_setting_flags(RunArgs::augment_args(clap::Command::new(
        "run",
    )))
}

/// `run` parsed as main parses it, with the options given.
fn parse(argv: &[&str]) -> (RunArgs, Given) {
    let matches = run_command().try_get_matches_from(argv).unwrap();
    let mut args = RunArgs::from_arg_matches(&matches).unwrap();
    crate::commands::args::take_engine_setting_flags(&matches, &mut args.gpu);
    (args, Given::of(Some(&matches)))
}

/// The options of `run` that are not part of what is measured: where and how results
/// are delivered, which cell or file to take the spec from, how the process runs.
const NOT_IN_THE_SPEC: &[&str] = &[
    "output",
    "label",
    "json",
    "quiet",
    "force",
    "require_clean",
    "retries",
    "again",
    "plan",
    "cell",
    "rerun",
    "job",
    "help",
];

/// Every argument id of `run` (derived, or an engine's own flag) is either an option of
/// [`spec::SPEC_OPTIONS`] or one that does not change what is measured: a new flag that
/// reaches neither fails here, not silently in a user's results.
#[test]
fn every_argument_of_run_is_in_the_spec_table_or_named_as_delivery() {
    let command = run_command();
    let in_table: Vec<&str> = spec::SPEC_OPTIONS
        .iter()
        .flat_map(|o| o.ids.iter().copied())
        .collect();
    let mut missing = Vec::new();
    for arg in command.get_arguments() {
        let id = arg.get_id().as_str();
        let reaches = in_table.contains(&id)
            || NOT_IN_THE_SPEC.contains(&id)
            || (crate::commands::args::is_engine_setting_flag(id)
                && in_table.contains(&"engine_setting"));
        if !reaches {
            missing.push(id.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "options of run that neither reach the spec nor are named as delivery: {missing:?}"
    );
    // And every id of the table is an option of run (a renamed field would leave a dead entry).
    let ids: Vec<String> = command
        .get_arguments()
        .map(|a| a.get_id().as_str().to_string())
        .collect();
    for id in &in_table {
        assert!(ids.iter().any(|i| i == id), "{id} is not an option of run");
    }
}

#[test]
fn every_option_of_the_command_line_reaches_the_spec() {
    let (args, _) = parse(&[
        "run",
        "alexnet",
        "--mode",
        "step",
        "-b",
        "1,4",
        "--image-size",
        "64,32x48",
        "-e",
        "candle",
        "--warmup",
        "3",
        "-n",
        "7",
        "--min-time",
        "1.5",
        "--max-time",
        "9",
        "--target-ci",
        "2",
        "--warmup-time",
        "0.5",
        "--memory-limit",
        "1GiB",
        "--seed",
        "9",
        "--threads",
        "1",
        "--precision",
        "bf16",
        "--device",
        "cuda:2",
        "--python",
        "/opt/py/bin/python3",
        "--compile-mode",
        "max-autotune",
        "--freezing",
        "--engine-setting",
        "streams=4",
        "--allow-cpu-adapter",
        "--cudnn-benchmark",
        "--tf32",
        "--channels-last",
        "--ov-hint",
        "throughput",
        "--nproc",
        "2",
        "--dist-timeout",
        "30",
    ]);
    let s = spec::from_args(&args).unwrap();
    assert_eq!(
        s.models,
        vec![ModelRef::Zoo {
            name: "alexnet".into()
        }]
    );
    assert_eq!(
        (s.engine.as_str(), s.mode, s.precision),
        ("candle", Mode::Step, Precision::Bf16)
    );
    assert_eq!(s.batch, Batches::Sizes(vec![1, 4]));
    assert_eq!(
        s.image_sizes,
        Some(vec![
            ImageSize::square(64),
            ImageSize {
                height: 32,
                width: 48
            }
        ])
    );
    assert_eq!((s.warmup, s.passes, s.seed, s.threads), (3, 7, 9, Some(1)));
    assert_eq!(
        (s.min_time_s, s.max_time_s, s.target_ci_pct, s.warmup_time_s),
        (Some(1.5), Some(9.0), Some(2.0), Some(0.5))
    );
    assert_eq!(s.memory_limit_bytes, Some(1 << 30));
    assert_eq!(
        s.engine_options,
        EngineSettings {
            device: Some(2),
            allow_cpu_adapter: true,
            cudnn_benchmark: true,
            tf32: true,
            channels_last: true,
            settings: [
                ("python", "/opt/py/bin/python3"),
                ("compile-mode", "max-autotune"),
                ("freezing", "true"),
                ("streams", "4"),
                ("hint", "throughput"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        }
    );
    assert_eq!(
        s.data_parallel,
        Some(DataParallel {
            local_ranks: Some(2),
            timeout_s: 30.0
        })
    );
    // No model: the original suite's ten.
    let (args, _) = parse(&["run"]);
    assert_eq!(
        spec::from_args(&args).unwrap().models.len(),
        cnnbench_zoo::legacy_models().len()
    );
}

#[test]
fn only_the_options_given_change_a_recorded_spec() {
    let (args, _) = parse(&["run", "resnet18", "-n", "5", "--seed", "3", "--tf32"]);
    let recorded = spec::from_args(&args).unwrap();
    let (args, given) = parse(&[
        "run",
        "--again",
        "r.json",
        "--passes",
        "8",
        "--dist-timeout",
        "9",
    ]);
    assert!(given.has("passes") && given.has("again") && !given.has("seed"));
    let mut spec = recorded.clone();
    let refused = spec::apply_given(&mut spec, &args, &given, |_| false).unwrap();
    assert!(refused.is_none());
    assert_eq!(spec.passes, 8);
    // Everything not given stays as recorded (the seed, TF32), and a timeout alone does
    // not make the run data-parallel.
    assert_eq!(
        RunSpec {
            passes: 5,
            ..spec.clone()
        },
        recorded
    );
    // Beside --plan, the first option the matrix sets is refused by name.
    let (args, given) = parse(&["run", "--plan", "m.toml", "--device", "1", "--seed", "4"]);
    let mut spec = recorded.clone();
    let refused = spec::apply_given(&mut spec, &args, &given, |o| o.matrix_sets).unwrap();
    assert_eq!(refused.map(|o| o.flag), Some("--seed"));
    // A matrix sets the scenario too (`scenario = "server"`, `qps = …`).
    for flags in [
        &["--scenario", "server"][..],
        &["--scenario", "server", "--qps", "5"][..],
    ] {
        let (args, given) = parse(&[&["run", "--plan", "m.toml"][..], flags].concat());
        let mut spec = recorded.clone();
        let refused = spec::apply_given(&mut spec, &args, &given, |o| o.matrix_sets).unwrap();
        assert_eq!(refused.map(|o| o.flag), Some("--scenario"));
    }
    let (args, given) = parse(&["run", "--plan", "m.toml", "--device", "1"]);
    let mut spec = recorded;
    assert!(
        spec::apply_given(&mut spec, &args, &given, |o| o.matrix_sets)
            .unwrap()
            .is_none()
    );
    assert_eq!(spec.engine_options.device, Some(1));
}

/// Every key of a cell a matrix takes is a `run` option of the same name that the
/// matrix sets (refused beside `--plan`), so the two cannot drift apart.
#[test]
fn every_cell_key_of_a_matrix_is_a_run_option_the_matrix_sets() {
    for key in cnnbench_plan::matrix::cell_keys() {
        let option = spec::SPEC_OPTIONS
            .iter()
            .find(|o| o.ids.contains(&key))
            .unwrap_or_else(|| panic!("the matrix key `{key}` is no option of run"));
        assert!(option.matrix_sets, "{key}: {}", option.flag);
    }
}

#[test]
fn a_job_that_is_not_ours_is_refused_with_what_to_do() {
    let e = job::decode("{\"spec\": 1}").unwrap_err();
    assert!(
        format!("{e:#}").contains("--job is for the processes cnnbench starts"),
        "{e:#}"
    );
    let e = job::read("job.json").unwrap_err();
    assert!(e.to_string().contains("--again"), "{e}");
    // A spec that does not validate is refused as the command line would refuse it.
    let (args, _) = parse(&["run", "resnet18"]);
    let mut spec = spec::from_args(&args).unwrap();
    spec.passes = 0;
    let text = job::encode(&job::Job {
        spec,
        role: Role::Main,
        delivery: delivery(),
    })
    .unwrap();
    assert!(job::decode(&text)
        .unwrap_err()
        .to_string()
        .contains("--passes must be at least 1"));
}

/// A spec of 10⁵ models built every graph before the first measurement; the count is
/// refused however the spec arrives: a job, or the command line (before the model
/// files are hashed). (Hostile input, round three.)
#[test]
fn more_models_than_a_run_takes_are_refused_before_anything_is_read() {
    let (args, _) = parse(&["run", "resnet18"]);
    let mut spec = spec::from_args(&args).unwrap();
    spec.models = vec![spec.models[0].clone(); 1001];
    let text = job::encode(&job::Job {
        spec,
        role: Role::Main,
        delivery: delivery(),
    })
    .unwrap();
    let e = job::decode(&text).unwrap_err().to_string();
    assert!(e.contains("1001 models in one run, more than 1000"), "{e}");
    // Files that do not exist: the count is refused before any is hashed.
    let mut argv = vec!["run".to_string()];
    for i in 0..1001 {
        argv.push("--model-file".into());
        argv.push(format!("/nonexistent/m{i}.json"));
    }
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let (args, _) = parse(&argv);
    let e = spec::from_args(&args).unwrap_err().to_string();
    assert!(e.contains("1001 models in one run"), "{e}");
}

#[test]
fn tf32_is_a_precision_and_the_older_flag_spells_it() {
    let spec_of = |argv: &[&str]| spec::from_args(&parse(argv).0).unwrap();
    let flag = spec_of(&["run", "resnet18", "--tf32"]);
    let named = spec_of(&["run", "resnet18", "--precision", "tf32"]);
    assert_eq!(flag.precision, Precision::Tf32, "--tf32 on f32 is tf32");
    assert_eq!(named.precision, Precision::Tf32);
    assert!(flag.tf32() && named.tf32());
    // Strict f32 has TF32 off.
    let strict = spec_of(&["run", "resnet18"]);
    assert!(!strict.tf32() && strict.precision == Precision::F32);
    // The engine is asked for TF32 either way.
    for s in [&flag, &named] {
        assert!(crate::commands::engines::options(&s.engine_options, None, s.precision).tf32);
    }
    assert!(!crate::commands::engines::options(&strict.engine_options, None, Precision::F32).tf32);
    // Beside a low precision the flag means nothing, and is refused.
    let bf16 = spec_of(&["run", "resnet18", "--tf32", "--precision", "bf16"]);
    let e = bf16.validate().unwrap_err();
    assert!(e.contains("--tf32") && e.contains("bf16"), "{e}");
    // A precision given to `--again` replaces a recorded --tf32.
    let (args, given) = parse(&["run", "--again", "r.json", "--precision", "f32"]);
    let mut again = flag.clone();
    spec::apply_given(&mut again, &args, &given, |_| false).unwrap();
    assert_eq!(again.precision, Precision::F32);
    assert!(!again.tf32());
}

/// `run` with no options is `RunSpec::new`, the spec a matrix cell starts from: the
/// command line's defaults (some of them clap's literals) and the matrix's cannot drift
/// apart.
#[test]
fn runs_defaults_are_the_specs_defaults_a_matrix_starts_from() {
    let (args, _) = parse(&["run", "resnet18"]);
    let from_the_command_line = spec::from_args(&args).unwrap();
    let models = vec![ModelRef::Zoo {
        name: "resnet18".into(),
    }];
    let mut expected = RunSpec::new(models, cnnbench_engine_burn::ENGINE_NAME);
    expected.allocator = spec::current_allocator();
    assert_eq!(from_the_command_line, expected);
    let matrix = cnnbench_plan::Matrix::parse(
        "format = \"cnnbench-matrix\"\nversion = 1\nmodels = [\"resnet18\"]\nengines = [\"burn-flex\"]\n",
        &[cnnbench_engine_burn::ENGINE_NAME],
    )
    .unwrap();
    let mut cell = matrix.spec(&matrix.cells[0]);
    cell.allocator = spec::current_allocator();
    assert_eq!(cell, from_the_command_line);
}
