//! From the command line to a [`RunSpec`], once. One table, [`SPEC_OPTIONS`], says
//! which options set which part of the spec; a fresh run takes every one, `--again`
//! takes those given on top of the recorded spec, `--plan` refuses those the matrix sets
//! and takes the rest.

use super::RunArgs;
use crate::commands::sweep::{BatchSpec, ImageSizes};
use anyhow::{anyhow, bail, Context, Result};
use cnnbench_results::scenario::{BatcherSpec, ScenarioSpec};
use cnnbench_results::{printable, Batches, BenchResult, DataParallel, ModelRef, RunSpec};
use std::collections::BTreeSet;
use std::path::Path;

/// The options given on the command line (clap's argument ids), as opposed to those at
/// their defaults.
#[derive(Clone, Debug, Default)]
pub struct Given(BTreeSet<String>);

impl Given {
    /// The options of a parsed command that came from the command line.
    pub fn of(matches: Option<&clap::ArgMatches>) -> Given {
        let Some(m) = matches else {
            return Given::default();
        };
        Given(
            m.ids()
                .filter(|id| {
                    m.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine)
                })
                // An engine's own flag (`--ov-hint`) is a spelling of --engine-setting.
                .map(|id| match id.as_str() {
                    flag if crate::commands::args::is_engine_setting_flag(flag) => {
                        "engine_setting".to_string()
                    }
                    other => other.to_string(),
                })
                .collect(),
        )
    }

    pub fn has(&self, id: &str) -> bool {
        self.0.contains(id)
    }
}

/// An option (or options) of `run` and the part of the spec it sets.
pub struct SpecOption {
    /// clap's ids: the field names of [`RunArgs`].
    pub ids: &'static [&'static str],
    /// The flag as the user writes it, for messages.
    pub flag: &'static str,
    /// A matrix file sets this for its cells: refused beside `--plan`.
    pub matrix_sets: bool,
    pub take: fn(&mut RunSpec, &RunArgs) -> Result<()>,
}

/// Every option that changes what is measured. A new one goes here, and reaches fresh
/// runs, reruns, matrix cells, ranks and probes alike.
pub const SPEC_OPTIONS: &[SpecOption] = &[
    SpecOption {
        ids: &["models", "model_file"],
        flag: "MODELS / --model-file",
        matrix_sets: true,
        take: |s, a| {
            s.models = models_of(a)?;
            Ok(())
        },
    },
    SpecOption {
        ids: &["engine"],
        flag: "--engine",
        matrix_sets: true,
        take: |s, a| {
            // Another engine's own settings are not this one's (`run --again R
            // --engine E`): those of the recorded engine are dropped.
            if s.engine != a.engine {
                s.engine_options.settings.clear();
            }
            s.engine = a.engine.clone();
            Ok(())
        },
    },
    SpecOption {
        ids: &["mode"],
        flag: "--mode",
        matrix_sets: true,
        take: |s, a| {
            s.mode = a.mode.into();
            Ok(())
        },
    },
    SpecOption {
        ids: &["precision"],
        flag: "--precision",
        matrix_sets: true,
        take: |s, a| {
            s.precision = a.precision.into();
            // A precision given anew replaces a recorded `--tf32` (`run --again`).
            s.engine_options.tf32 = false;
            Ok(())
        },
    },
    SpecOption {
        ids: &["batch_size"],
        flag: "--batch-size",
        matrix_sets: true,
        take: |s, a| {
            s.batch = match &a.batch_size {
                BatchSpec::List(sizes) => Batches::Sizes(sizes.clone()),
                BatchSpec::Max => Batches::Max,
            };
            Ok(())
        },
    },
    SpecOption {
        ids: &["image_size"],
        flag: "--image-size",
        matrix_sets: true,
        take: |s, a| {
            s.image_sizes = a.image_size.as_ref().map(|ImageSizes(v)| v.clone());
            Ok(())
        },
    },
    SpecOption {
        ids: &["warmup"],
        flag: "--warmup",
        matrix_sets: true,
        take: |s, a| {
            s.warmup = a.warmup;
            Ok(())
        },
    },
    SpecOption {
        ids: &["passes"],
        flag: "--passes",
        matrix_sets: true,
        take: |s, a| {
            s.passes = a.passes;
            Ok(())
        },
    },
    SpecOption {
        ids: &["min_time"],
        flag: "--min-time",
        matrix_sets: true,
        take: |s, a| {
            s.min_time_s = a.min_time;
            Ok(())
        },
    },
    SpecOption {
        ids: &["max_time"],
        flag: "--max-time",
        matrix_sets: true,
        take: |s, a| {
            s.max_time_s = a.max_time;
            Ok(())
        },
    },
    SpecOption {
        ids: &["target_ci"],
        flag: "--target-ci",
        matrix_sets: true,
        take: |s, a| {
            s.target_ci_pct = a.target_ci;
            Ok(())
        },
    },
    SpecOption {
        ids: &["warmup_time"],
        flag: "--warmup-time",
        matrix_sets: true,
        take: |s, a| {
            s.warmup_time_s = a.warmup_time;
            Ok(())
        },
    },
    SpecOption {
        ids: &["memory_limit"],
        flag: "--memory-limit",
        matrix_sets: true,
        take: |s, a| {
            s.memory_limit_bytes = a.memory_limit;
            Ok(())
        },
    },
    SpecOption {
        ids: &["seed"],
        flag: "--seed",
        matrix_sets: true,
        take: |s, a| {
            s.seed = a.seed;
            Ok(())
        },
    },
    SpecOption {
        ids: &["threads"],
        flag: "--threads",
        matrix_sets: true,
        take: |s, a| {
            s.threads = a.threads;
            Ok(())
        },
    },
    SpecOption {
        ids: &["repeat"],
        flag: "--repeat",
        matrix_sets: true,
        take: |s, a| {
            s.repeat = a.repeat;
            Ok(())
        },
    },
    SpecOption {
        ids: &["scenario"],
        flag: "--scenario",
        matrix_sets: true,
        take: |s, a| {
            // Another scenario starts from its own defaults; the same one keeps what a
            // rerun recorded.
            let kind = a.scenario;
            if s.scenario.as_ref().map(|sc| sc.kind) != kind {
                s.scenario = kind.map(ScenarioSpec::new);
            }
            Ok(())
        },
    },
    SpecOption {
        ids: &["calibration"],
        flag: "--calibration",
        matrix_sets: true,
        take: |s, a| {
            s.calibration_images = a.calibration;
            Ok(())
        },
    },
    SpecOption {
        ids: &["samples_per_query"],
        flag: "--samples-per-query",
        matrix_sets: true,
        take: |s, a| scenario_setting(s, a.samples_per_query, |sc, n| sc.samples_per_query = n),
    },
    SpecOption {
        ids: &["qps"],
        flag: "--qps",
        matrix_sets: true,
        take: |s, a| scenario_setting(s, a.qps, |sc, qps| sc.target_qps = Some(qps)),
    },
    SpecOption {
        ids: &["latency_bound"],
        flag: "--latency-bound",
        matrix_sets: true,
        take: |s, a| scenario_setting(s, a.latency_bound, |sc, ms| sc.latency_bound_ms = Some(ms)),
    },
    SpecOption {
        ids: &["scenario_time"],
        flag: "--scenario-time",
        matrix_sets: true,
        take: |s, a| scenario_setting(s, a.scenario_time, |sc, t| sc.min_duration_s = t),
    },
    SpecOption {
        ids: &["min_queries"],
        flag: "--min-queries",
        matrix_sets: true,
        take: |s, a| scenario_setting(s, a.min_queries, |sc, n| sc.min_queries = n),
    },
    SpecOption {
        ids: &["find_peak"],
        flag: "--find-peak",
        matrix_sets: true,
        take: |s, a| scenario_setting(s, a.find_peak.then_some(true), |sc, on| sc.find_peak = on),
    },
    SpecOption {
        ids: &["in_flight"],
        flag: "--in-flight",
        matrix_sets: true,
        take: |s, a| scenario_setting(s, a.in_flight, |sc, n| sc.in_flight = n),
    },
    SpecOption {
        ids: &["max_batch", "batch_timeout"],
        flag: "--max-batch / --batch-timeout",
        matrix_sets: true,
        take: |s, a| {
            let batcher = a.max_batch.map(|max_batch| BatcherSpec {
                max_batch,
                timeout_ms: a.batch_timeout.unwrap_or(0.0),
            });
            scenario_setting(s, batcher, |sc, b| sc.batcher = Some(b))
        },
    },
    SpecOption {
        ids: &["cudnn_benchmark"],
        flag: "--cudnn-benchmark",
        matrix_sets: true,
        take: |s, a| {
            s.engine_options.cudnn_benchmark = a.gpu.cudnn_benchmark;
            Ok(())
        },
    },
    SpecOption {
        ids: &["tf32"],
        flag: "--tf32",
        matrix_sets: true,
        take: |s, a| {
            s.engine_options.tf32 = a.gpu.tf32;
            s.settle_tf32();
            Ok(())
        },
    },
    SpecOption {
        ids: &["channels_last"],
        flag: "--channels-last",
        matrix_sets: true,
        take: |s, a| {
            s.engine_options.channels_last = a.gpu.channels_last;
            Ok(())
        },
    },
    // After --engine, whose change drops the settings of the engine before.
    SpecOption {
        ids: &["engine_setting"],
        flag: "--engine-setting (or an engine's own flag, e.g. --ov-hint)",
        matrix_sets: false,
        take: |s, a| {
            s.engine_options.settings.extend(a.gpu.own_settings()?);
            Ok(())
        },
    },
    SpecOption {
        ids: &["device"],
        flag: "--device",
        matrix_sets: false,
        take: |s, a| {
            s.engine_options.device = a.gpu.device;
            Ok(())
        },
    },
    SpecOption {
        ids: &["allow_cpu_adapter"],
        flag: "--allow-cpu-adapter",
        matrix_sets: false,
        take: |s, a| {
            s.engine_options.allow_cpu_adapter = a.gpu.allow_cpu_adapter;
            Ok(())
        },
    },
    SpecOption {
        ids: &["nproc", "distributed"],
        flag: "--nproc / --distributed",
        matrix_sets: false,
        take: |s, a| {
            let timeout_s = s
                .data_parallel
                .as_ref()
                .map_or(a.dist_timeout, |d| d.timeout_s);
            s.data_parallel = match (a.nproc, a.distributed) {
                (Some(n), _) => Some(DataParallel {
                    local_ranks: Some(n),
                    timeout_s,
                }),
                (None, true) => Some(DataParallel {
                    local_ranks: None,
                    timeout_s,
                }),
                (None, false) => None,
            };
            Ok(())
        },
    },
    // After --nproc/--distributed, whose data-parallel settings it changes.
    SpecOption {
        ids: &["dist_timeout"],
        flag: "--dist-timeout",
        matrix_sets: false,
        take: |s, a| {
            if let Some(d) = s.data_parallel.as_mut() {
                d.timeout_s = a.dist_timeout;
            }
            Ok(())
        },
    },
];

/// A setting of the spec's scenario, where one was given (clap refuses the setting
/// without `--scenario`; a rerun's scenario comes from the result).
fn scenario_setting<T>(
    spec: &mut RunSpec,
    value: Option<T>,
    set: impl FnOnce(&mut ScenarioSpec, T),
) -> Result<()> {
    match (spec.scenario.as_mut(), value) {
        (Some(scenario), Some(value)) => {
            set(scenario, value);
            Ok(())
        }
        (None, Some(_)) => Err(anyhow!(
            "a scenario's setting needs --scenario: this run times passes back to back"
        )),
        (_, None) => Ok(()),
    }
}

/// Under a query scenario the batch the engine computes is a query's samples: it follows
/// the scenario unless `-b` is given, and then the two must agree (the spec's check).
pub fn settle_scenario_batch(spec: &mut RunSpec, given: &Given) -> Result<()> {
    let Some(scenario) = &spec.scenario else {
        return Ok(());
    };
    if scenario.kind.rules().batch_is_the_query && !given.has("batch_size") {
        spec.batch = Batches::Sizes(vec![scenario.samples_per_query]);
    }
    Ok(())
}

/// The heap policy this process runs under (set by `--allocator` before anything else).
pub fn current_allocator() -> String {
    cnnbench_host::allocator::current()
        .policy
        .as_str()
        .to_string()
}

/// A fresh run's spec: every option, given or at its default.
pub fn from_args(args: &RunArgs) -> Result<RunSpec> {
    let mut spec = RunSpec::new(Vec::new(), &args.engine);
    for option in SPEC_OPTIONS {
        (option.take)(&mut spec, args)?;
    }
    spec.allocator = current_allocator();
    Ok(spec)
}

/// The options given that a spec from a file does not already fix: those in
/// `SPEC_OPTIONS` for which `refuse` is false are taken; the first for which it is true
/// is returned, refused.
pub fn apply_given(
    spec: &mut RunSpec,
    args: &RunArgs,
    given: &Given,
    refuse: impl Fn(&SpecOption) -> bool,
) -> Result<Option<&'static SpecOption>> {
    for option in SPEC_OPTIONS {
        if option.ids.iter().any(|id| given.has(id)) {
            if refuse(option) {
                return Ok(Some(option));
            }
            (option.take)(spec, args)?;
        }
    }
    Ok(None)
}

/// `--again RESULT.json`: the result's recorded spec with the options given on top, and
/// its label (kept unless `--label` is given).
pub fn again(path: &Path, args: &RunArgs, given: &Given) -> Result<(RunSpec, Option<String>)> {
    let result = read_result(path)?;
    let mut spec = result.spec.ok_or_else(|| {
        anyhow!(
            "{} records no run spec (it was written before cnnbench recorded one, or by another tool): run it with its options instead; its config says {} on {}, {} mode, batch {}",
            path.display(),
            cnnbench_results::printable(&result.model.name),
            cnnbench_results::printable(&result.engine.name),
            result.config.mode,
            result.config.batch_size
        )
    })?;
    // A result file is data: a program it names (the Python of the run) is not run
    // unless the user gives it on the command line.
    let given_now = args.gpu.own_settings()?;
    for (key, value) in crate::commands::engines::program_settings(&spec) {
        spec.engine_options.settings.remove(&key);
        if !given_now.contains_key(&key) {
            return Err(anyhow!(
                "{} was measured with the engine setting `{key}` = \"{}\", a program the engine runs: a result file is data and never names a program cnnbench runs, so it is not taken from the file; to run that program, give it yourself (--engine-setting {key}=PATH, or the engine's own flag, e.g. --python PATH)",
                path.display(),
                cnnbench_results::printable(&value)
            ));
        }
    }
    apply_given(&mut spec, args, given, |_| false)?;
    // Checked before it is shown in a command to run (hostile input, round three).
    if !cnnbench_results::spec::ALLOCATORS.contains(&spec.allocator.as_str()) {
        return Err(anyhow!(
            "{} records the heap policy \"{}\", which is none of cnnbench's (keep or system): the file was edited, or is not a result of cnnbench",
            path.display(),
            cnnbench_results::printable(&spec.allocator)
        ));
    }
    let now = current_allocator();
    if spec.allocator != now && !given.has("allocator") {
        return Err(anyhow!(
            "{} was measured with the heap policy `{}` and this process has `{now}`: the policy is set when cnnbench starts, so give it first: cnnbench --allocator {} run --again {}",
            path.display(),
            spec.allocator,
            spec.allocator,
            path.display()
        ));
    }
    spec.allocator = now;
    // Before each model file is hashed: the count is validated again with the rest.
    cnnbench_results::spec::check_model_count(spec.models.len())
        .map_err(|e| anyhow!("{}: {e}", path.display()))?;
    for model in &spec.models {
        if let ModelRef::File { path: file, sha256 } = model {
            // A relative path recorded in the file is read from the working folder, as
            // when it was measured: said, since a rerun from elsewhere finds another file.
            let shown = printable(&file.display().to_string());
            let from = if file.is_relative() {
                let here = std::env::current_dir()
                    .map(|d| printable(&d.display().to_string()))
                    .unwrap_or_else(|_| "(the working folder cannot be read)".into());
                format!(" (recorded as a relative path, read from the working folder {here}: rerun from the folder the run was made in)")
            } else {
                String::new()
            };
            let now = file_sha256(file).with_context(|| {
                format!(
                    "{} was measured on the model file {shown}{from}, which cannot be read now",
                    path.display(),
                )
            })?;
            if &now != sha256 {
                return Err(anyhow!(
                    "the model file {shown}{from} has changed since {} was measured (SHA-256 {} then, {} now): restore it, or run the file anew without --again",
                    path.display(),
                    short(sha256),
                    short(&now)
                ));
            }
        }
    }
    Ok((spec, result.label))
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// A result file, read with the report's bounds.
fn read_result(path: &Path) -> Result<BenchResult> {
    let text = cnnbench_graph::read::read_bounded_to_string(
        path,
        cnnbench_results::folders::MAX_RESULT_FILE_BYTES,
        "result files",
    )
    .with_context(|| format!("cannot read {}", path.display()))?;
    let not_a_result = || format!("{} is not a cnnbench result file", path.display());
    let document: serde_json::Value = serde_json::from_str(&text).with_context(not_a_result)?;
    check_format_and_version(path, &document)?;
    serde_json::from_value(document).with_context(not_a_result)
}

/// A result file's `format` and `version` must be ones this build reads: a file of
/// `"version": 999` was rerun without a word, fields it may mean otherwise read as ours.
fn check_format_and_version(path: &Path, document: &serde_json::Value) -> Result<()> {
    use cnnbench_results::{RESULT_FORMAT, RESULT_VERSIONS_READ};
    let format = document.get("format").and_then(serde_json::Value::as_str);
    if format == Some(cnnbench_results::profile::PROFILE_FORMAT) {
        bail!(
            "{} is a profile (cnnbench profile), not a run's result: --again reruns results of cnnbench run; run cnnbench profile with its options",
            path.display()
        );
    }
    if format != Some(RESULT_FORMAT) {
        bail!(
            "{} is not a cnnbench result file (its format is {}, not \"{RESULT_FORMAT}\")",
            path.display(),
            format.map_or_else(
                || "missing".to_string(),
                |f| format!("\"{}\"", cnnbench_results::printable(f))
            )
        );
    }
    let version = document.get("version");
    let readable = version
        .and_then(serde_json::Value::as_u64)
        .and_then(|v| u32::try_from(v).ok())
        .is_some_and(|v| RESULT_VERSIONS_READ.contains(&v));
    if !readable {
        bail!(
            "{} is a result of version {}, which this cnnbench does not read (it reads versions {} to {}): rerun it with the cnnbench that wrote it, or run the model anew with its options",
            path.display(),
            version.map_or_else(|| "(none)".to_string(), |v| cnnbench_results::printable(&v.to_string())),
            RESULT_VERSIONS_READ.start(),
            RESULT_VERSIONS_READ.end()
        );
    }
    Ok(())
}

/// The models of the command line: zoo names, then model files (hashed; recorded by
/// the path given, so `--again` finds them from the same folder); the original suite's
/// ten when none is given.
fn models_of(args: &RunArgs) -> Result<Vec<ModelRef>> {
    if args.models.is_empty() && args.model_file.is_empty() {
        return Ok(cnnbench_zoo::legacy_models()
            .into_iter()
            .map(|name| ModelRef::Zoo { name: name.into() })
            .collect());
    }
    // Before the files are hashed; validated again with the rest of the spec.
    cnnbench_results::spec::check_model_count(args.models.len() + args.model_file.len())
        .map_err(|e| anyhow!(e))?;
    let mut models: Vec<ModelRef> = args
        .models
        .iter()
        .map(|name| ModelRef::Zoo { name: name.clone() })
        .collect();
    for path in &args.model_file {
        let sha256 =
            file_sha256(path).with_context(|| format!("cannot read {}", path.display()))?;
        models.push(ModelRef::File {
            path: path.clone(),
            sha256,
        });
    }
    Ok(models)
}

/// The SHA-256 of a model file's bytes, in hex, read as the importer reads the file: a
/// device, a pipe or a file larger than its format allows is refused before anything is
/// read (hashing `/dev/zero` would spin, a FIFO block, a sparse 20 GB file be read whole).
pub fn file_sha256(path: &Path) -> Result<String> {
    use sha2::Digest;
    let bytes = cnnbench_import::read_model_file(path)?;
    Ok(sha2::Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}
