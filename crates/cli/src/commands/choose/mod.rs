//! `cnnbench choose MODEL`: which stack and precision to deploy this model on, on this
//! machine, and what it costs in accuracy. Every available engine in every precision it
//! offers, at a small and a large batch, runs as the cells of a matrix (each in a fresh
//! process, through `run --plan`, so an interrupted choice resumes where it stopped and
//! `--budget` bounds it); each engine and precision is verified against burn-flex in f32
//! on the same weights and inputs; the report ranks them (`cnnbench_report::choose`),
//! draws the Pareto front of speed against error and says the conclusion. With
//! `--scenario server --latency-bound MS` each cell is a `--find-peak` server run instead
//! of the two batches, and the ranking is by the highest load held within the bound.

use super::common::{align_right, new_table, zoo_model, ImageSize};
use super::engines;
use super::report::{aliases, load, ZooCatalog};
use anyhow::{anyhow, Context, Result};
use cnnbench_bench::images::ImageFolder;
use cnnbench_bench::verify::{self, VerifyRequest};
use cnnbench_engine::provider::EngineOptions;
use cnnbench_engine::settings::SettingsMap;
use cnnbench_engine::{Mode, Precision};
use cnnbench_report::catalog::Cached;
use cnnbench_report::choose::{
    choose, choose_serving, AccuracyCost, Choice, ServingChoice, ACCURACY_FILE,
};
use cnnbench_report::group::{self, Duplicates, Stat};
use cnnbench_report::serving::{ScenarioRun, Serving};
use cnnbench_results::scenario::{ScenarioKind, ScenarioSpec};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod matrix;
use matrix::write_matrix;

/// The precisions `choose` tries where an engine offers them.
const PRECISIONS: [Precision; 6] = [
    Precision::F32,
    Precision::Tf32,
    Precision::Bf16,
    Precision::AmpBf16,
    Precision::F16,
    Precision::Int8,
];

#[derive(clap::Args)]
pub struct ChooseArgs {
    /// The zoo model to deploy.
    pub model: String,
    /// Only these engines (default: every engine that can run here).
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub engines: Option<Vec<String>>,
    /// Only these precisions (default: f32, tf32, bf16, amp-bf16, f16 and int8, where an
    /// engine offers them).
    #[arg(long, value_enum, value_delimiter = ',', num_args = 1..)]
    pub precisions: Option<Vec<super::args::PrecisionArg>>,
    /// The small batch (ranked by latency) and the large one (ranked by throughput).
    #[arg(long, short = 'b', value_delimiter = ',', num_args = 1.., default_values_t = [1, 16])]
    pub batch_sizes: Vec<usize>,
    /// Input image size: N or HxW (default: the model's own).
    #[arg(long, value_name = "SIZE")]
    pub image_size: Option<ImageSize>,
    /// Timed passes of each run.
    #[arg(long, default_value_t = 20)]
    pub passes: usize,
    /// Warm-up passes of each run.
    #[arg(long, default_value_t = 3)]
    pub warmup: usize,
    /// Runs (fresh processes) of each configuration, interleaved: with 2 or more the
    /// conclusion gives a confidence interval.
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Seed of the weights, inputs and calibration.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The weights the accuracy costs are measured with (safetensors keyed
    /// <node>.<tensor>, as `convert` and `verify --save-weights` write them); default:
    /// random ones, on which a deep network's output can be little more than its last
    /// layer's bias, so that every precision looks exact. The timed runs keep the seed's
    /// random weights, which take the same time.
    #[arg(long, value_name = "FILE")]
    pub weights: Option<PathBuf>,
    /// A folder of your own images (JPEG, PNG) the accuracy costs are measured on: an
    /// int8 candidate is calibrated on its first 8, and each candidate's top class is
    /// compared with f32's over all of them (top-1 and top-5 agreement, beside the
    /// error). With --weights, the cost a trained network pays. The timed runs keep
    /// random images and calibration, which take the same time.
    #[arg(long, value_name = "DIR")]
    pub images: Option<PathBuf>,
    /// Thread-pool size of every engine (default: each engine's own, all cores).
    #[arg(long, value_parser = crate::commands::common::thread_count)]
    pub threads: Option<usize>,
    /// Start no new run after this many seconds (one at least starts); what ran is
    /// ranked, and running the same command again goes on from there.
    #[arg(long, value_name = "SECONDS")]
    pub budget: Option<f64>,
    /// The folder of the runs (in runs/), their matrix, the accuracy costs and the
    /// chart (default: results/choose-MODEL).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Rank by a serving scenario instead of the two batches: `server`, the highest load
    /// (queries a second of one image each, arriving as a Poisson process) each stack
    /// serves with its p99 latency within --latency-bound, found by `run --find-peak`.
    #[arg(long, value_enum, requires = "latency_bound")]
    pub scenario: Option<ChooseScenario>,
    /// The server's p99 latency bound in milliseconds (with --scenario server).
    #[arg(long, value_name = "MS", requires = "scenario")]
    pub latency_bound: Option<f64>,
    /// Queries of each probe of the peak search (with --scenario server; default 459,
    /// the fewest that bound a p99 at 99% confidence).
    #[arg(long, value_name = "N", requires = "scenario")]
    pub min_queries: Option<usize>,
    /// Seconds each probe issues queries for at least (with --scenario server; default
    /// `run`'s, 10).
    #[arg(long, value_name = "SECONDS", requires = "scenario")]
    pub scenario_time: Option<f64>,
}

/// The serving scenarios `choose` ranks by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ChooseScenario {
    // MLPerf's server scenario: the highest load that holds the p99 bound. (A doc comment
    // here would turn `choose --help` into its long form.)
    Server,
}

/// `--scenario server`'s settings, checked.
#[derive(Clone, Copy, Debug)]
struct ServerRanking {
    bound_ms: f64,
    min_queries: usize,
    scenario_time: Option<f64>,
}

/// The fewest queries that bound a p99 at 99% confidence (LoadGen's early stopping).
const FEWEST_FOR_P99: usize = 459;

impl ServerRanking {
    fn of(args: &ChooseArgs) -> Result<Option<ServerRanking>> {
        let Some(ChooseScenario::Server) = args.scenario else {
            return Ok(None);
        };
        let bound_ms = args
            .latency_bound
            .ok_or_else(|| anyhow!("--scenario server needs --latency-bound MS"))?;
        let ranking = ServerRanking {
            bound_ms,
            min_queries: args.min_queries.unwrap_or(FEWEST_FOR_P99),
            scenario_time: args.scenario_time,
        };
        // The probes' scenario, checked as `run` checks it, before the matrix that
        // carries it is written: a value `run` refuses would leave a matrix no cell runs.
        let mut probe = ScenarioSpec::new(ScenarioKind::Server);
        probe.find_peak = true;
        probe.latency_bound_ms = Some(ranking.bound_ms);
        probe.min_queries = ranking.min_queries;
        if let Some(seconds) = ranking.scenario_time {
            probe.min_duration_s = seconds;
        }
        probe.validate().map_err(|e| anyhow!(e))?;
        Ok(Some(ranking))
    }
}

/// The longest `--budget`, seconds: 30 days.
const MAX_BUDGET_S: f64 = 2_592_000.0;

/// The label of `choose`'s runs.
const LABEL: &str = "choose";

/// One engine, precision and setting of the engine's own to try.
struct Candidate {
    engine: String,
    precision: Precision,
    /// The engine's own settings that matter for deployment (empty: its defaults).
    settings: SettingsMap,
}

/// An engine's deployment settings (`Provider::deployment_settings`) as axes: each key
/// with its default value and the one to try.
fn setting_axes(provider: &dyn cnnbench_engine::provider::Provider) -> Vec<(String, [String; 2])> {
    let declared = (provider.settings().declared)();
    provider
        .deployment_settings()
        .into_iter()
        .filter_map(|(key, value)| {
            let doc = declared.iter().find(|d| d.key == key)?;
            Some((key.to_string(), [doc.default.clone(), value.to_string()]))
        })
        .collect()
}

/// Why a run of a cell failed, in one line: the first error it printed (`error: …`),
/// without its prefix. The lines after it (the runs kept, the exit status) add nothing
/// to "left out of the ranking".
fn failure_reason(stderr: &str) -> Option<String> {
    stderr
        .lines()
        .find_map(|line| line.strip_prefix("error: "))
        .map(str::to_string)
}

/// Every combination of the axes' values, as settings maps (one empty map without axes).
fn combinations(axes: &[(String, [String; 2])]) -> Vec<SettingsMap> {
    let mut out = vec![SettingsMap::new()];
    for (key, values) in axes {
        out = out
            .into_iter()
            .flat_map(|map| {
                values.iter().map(move |v| {
                    let mut m = map.clone();
                    m.insert(key.clone(), v.clone());
                    m
                })
            })
            .collect();
    }
    out
}

pub fn run(args: ChooseArgs) -> Result<ExitCode> {
    let [small, large] = <[usize; 2]>::try_from(args.batch_sizes.as_slice())
        .map_err(|_| anyhow!("--batch-sizes takes two: the small batch and the large one"))?;
    if small == 0 || large == 0 || small >= large {
        return Err(anyhow!(
            "--batch-sizes {small},{large}: the small batch first, both at least 1 and the large one larger"
        ));
    }
    if let Some(budget) = args.budget {
        if !(budget > 0.0 && budget <= MAX_BUDGET_S) {
            return Err(anyhow!(
                "--budget must be from 0 to {MAX_BUDGET_S} seconds (30 days), not {}",
                cnnbench_results::number(budget)
            ));
        }
    }
    let server = ServerRanking::of(&args)?;
    let graph = zoo_model(&args.model, args.image_size)?;
    // What the accuracy costs are measured with, read before any cell runs: a wrong
    // path found after an hour of runs would cost the hour.
    let measured_on = AccuracyInputs::load(&args, &graph)?;
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(format!("choose-{}", graph.name())));
    std::fs::create_dir_all(&output)
        .with_context(|| format!("cannot make the folder {}", output.display()))?;
    // The accuracy costs kept from an earlier choice are read after the runs; what is
    // planted under their name (a link, a FIFO) is refused now, before any cell runs.
    cnnbench_graph::read_owned(
        &output.join(ACCURACY_FILE),
        MAX_ACCURACY_FILE_BYTES,
        "choose accuracy files",
    )?;
    let precisions: Vec<Precision> = match &args.precisions {
        Some(given) => given.iter().map(|&p| p.into()).collect(),
        None => PRECISIONS.to_vec(),
    };
    let candidates = candidates(&args, &precisions)?;
    if candidates.is_empty() {
        return Err(anyhow!(
            "no engine here runs inference in {}: `cnnbench engines` lists what each can do",
            names(&precisions)
        ));
    }
    let started = Instant::now();
    let budget = args.budget.map(Duration::from_secs_f64);
    let matrix_path = write_matrix(&args, &graph, &candidates, &output, [small, large], server)?;
    let matrix = super::plan::load(&matrix_path)?;
    let program = std::env::current_exe().context("cannot find this program's path")?;
    // The runs' result files apart from the matrix, the accuracy costs and the chart.
    let runs = output.join("runs");
    let mut stopped_by_budget = 0;
    let mut started_runs = 0;
    for cell in &matrix.cells {
        // A cell that has its result is not run again (the child would find it and stop).
        if let Some(path) =
            cnnbench_plan::finished_result(&runs, cell.index, &matrix.spec(cell), Some(LABEL))?
        {
            errln!(
                "choose: cell {} of {} ({}) already has a result: {}",
                cell.index,
                matrix.cells.len(),
                cell.describe(),
                path.display()
            );
            continue;
        }
        // Past the budget no run starts, but one at least does in every invocation, so
        // that running the command again always goes on.
        if started_runs > 0 && budget.is_some_and(|b| started.elapsed() >= b) {
            stopped_by_budget += 1;
            continue;
        }
        started_runs += 1;
        errln!(
            "choose: cell {} of {}: {}",
            cell.index,
            matrix.cells.len(),
            cell.describe()
        );
        let run = std::process::Command::new(&program)
            .arg("run")
            .arg("--plan")
            .arg(&matrix_path)
            .arg("--cell")
            .arg(cell.index.to_string())
            .arg("-o")
            .arg(&runs)
            .arg("--label")
            .arg(LABEL)
            .arg("-q")
            // Its table is the ranking's row; its warnings are shown when it ends.
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .output()
            .with_context(|| format!("cannot start {}", program.display()))?;
        let said = String::from_utf8_lossy(&run.stderr);
        if run.status.success() {
            for line in said.lines() {
                errln!("{line}");
            }
        } else {
            errln!(
                "choose: {} did not run ({}); it is left out of the ranking",
                cell.describe(),
                failure_reason(&said).unwrap_or_else(|| run.status.to_string())
            );
        }
    }
    let costs = accuracy_costs(
        &args,
        &graph,
        &candidates,
        &output,
        (budget, started),
        measured_on,
    )?;
    let chart = match server {
        None => {
            let choice = rank(&runs, &costs, &graph, [small, large])?;
            print_choice(&choice, args.weights.is_none());
            cnnbench_report::charts::write_pareto_chart(&choice, &output)?
        }
        Some(server) => {
            let choice = rank_serving(&runs, &costs, &graph, server.bound_ms)?;
            print_serving_choice(&choice, args.weights.is_none());
            cnnbench_report::charts::write_serving_pareto_chart(&choice, &output)?
        }
    };
    for path in chart {
        outln!("chart: {}", path.display());
    }
    if stopped_by_budget > 0 {
        outln!(
            "the budget ran out before {stopped_by_budget} run(s): run the same command again to go on"
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn names(precisions: &[Precision]) -> String {
    let names: Vec<&str> = precisions.iter().map(|p| p.as_str()).collect();
    names.join(", ")
}

/// Every engine that can run here (or those named) in every asked precision it offers
/// for inference, as a started engine reports it (OpenVINO's low precisions depend on
/// the CPU).
fn candidates(args: &ChooseArgs, precisions: &[Precision]) -> Result<Vec<Candidate>> {
    // An engine name that is none is said before any engine starts.
    for name in args.engines.iter().flatten() {
        engines::find(name)?;
    }
    let mut out = Vec::new();
    for status in engines::statuses() {
        let named = args.engines.as_ref();
        if named.is_some_and(|n| !n.iter().any(|e| e == status.name)) {
            continue;
        }
        if let Err(why) = &status.available {
            if named.is_some() {
                return Err(anyhow!("engine {} cannot run: {why}", status.name));
            }
            continue;
        }
        let options = EngineOptions {
            threads: args.threads,
            ..EngineOptions::default()
        };
        let capabilities = match engines::create(status.name, &options) {
            Ok(engine) => engine.capabilities(),
            Err(e) => {
                errln!("choose: {} left out: {e:#}", status.name);
                continue;
            }
        };
        if !capabilities.modes.contains(&Mode::Infer) {
            continue;
        }
        let provider = engines::find(status.name)?;
        let variants = combinations(&setting_axes(provider.as_ref()));
        for &precision in precisions {
            if capabilities.precisions.contains(&precision) {
                for settings in &variants {
                    if let Some(why) = provider.refuses(precision, settings) {
                        let label: Vec<String> =
                            settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
                        errln!(
                            "choose: {} {} with {} left out: {why}",
                            status.name,
                            precision.as_str(),
                            label.join(" ")
                        );
                        continue;
                    }
                    out.push(Candidate {
                        engine: status.name.to_string(),
                        precision,
                        settings: settings.clone(),
                    });
                }
            }
        }
    }
    Ok(out)
}

/// The weights and images of `--weights` and `--images`, read and checked against the
/// model.
struct AccuracyInputs {
    weights: Option<cnnbench_graph::Weights>,
    folder: Option<Arc<ImageFolder>>,
}

impl AccuracyInputs {
    fn load(args: &ChooseArgs, graph: &cnnbench_graph::Graph) -> Result<AccuracyInputs> {
        let weights = args
            .weights
            .as_deref()
            .map(|file| {
                let w = cnnbench_graph::Weights::load(file)
                    .with_context(|| format!("cannot use --weights {}", file.display()))?;
                w.check(graph, true).with_context(|| {
                    format!("the weights {} do not fit {}", file.display(), graph.name())
                })?;
                Ok::<_, anyhow::Error>(w)
            })
            .transpose()?;
        let folder = args
            .images
            .as_deref()
            .map(|folder| ImageFolder::load(folder, graph.input_shape()).map(Arc::new))
            .transpose()?;
        Ok(AccuracyInputs { weights, folder })
    }
}

/// An accuracy file holds a few hundred bytes per candidate; one far larger is not ours.
const MAX_ACCURACY_FILE_BYTES: u64 = 16 << 20;

/// Each candidate's accuracy cost: `verify` against burn-flex in f32 (the inference
/// output, batch 2, the run's seed), kept in the output folder so a resumed choice does
/// not measure it again.
fn accuracy_costs(
    args: &ChooseArgs,
    graph: &cnnbench_graph::Graph,
    candidates: &[Candidate],
    output: &Path,
    (budget, started): (Option<Duration>, Instant),
    AccuracyInputs { weights, folder }: AccuracyInputs,
) -> Result<Vec<AccuracyCost>> {
    let path = output.join(ACCURACY_FILE);
    let mut costs: Vec<AccuracyCost> = match cnnbench_graph::read_owned(
        &path,
        MAX_ACCURACY_FILE_BYTES,
        "choose accuracy files",
    )? {
        Some(bytes) => serde_json::from_slice(&bytes)
            .with_context(|| format!("{} is not a choose accuracy file", path.display()))?,
        None => Vec::new(),
    };
    let source = match &args.weights {
        Some(file) => format!("from {}", file.display()),
        None => format!("random, seed {}", args.seed),
    };
    let image_folder = folder.as_ref().map(|f| f.describe(f.len()));
    let options = EngineOptions {
        threads: args.threads,
        ..EngineOptions::default()
    };
    let reference = engines::create(cnnbench_engine_burn::ENGINE_NAME, &options)?;
    for c in candidates {
        let options = EngineOptions {
            settings: c.settings.clone(),
            ..options.clone()
        };
        let engine = match engines::create(&c.engine, &options) {
            Ok(engine) => engine,
            Err(e) => {
                errln!("choose: {} left out of the accuracy costs: {e:#}", c.engine);
                continue;
            }
        };
        let variant = engine.info().variant;
        // A cost measured on other weights or other images is measured again.
        let known = costs.iter().any(|k| {
            k.is_for(&c.engine, c.precision, &variant)
                && k.weights == source
                && k.image_folder == image_folder
        });
        if known || budget.is_some_and(|b| started.elapsed() >= b) {
            continue;
        }
        let words = if variant.is_empty() {
            String::new()
        } else {
            format!(" ({})", variant.join(", "))
        };
        errln!(
            "choose: accuracy of {} {}{words} against burn-flex f32",
            c.engine,
            c.precision.as_str()
        );
        let request = VerifyRequest {
            batch_size: 2,
            seed: args.seed,
            tolerance: verify::tolerance_for(c.precision),
            weights: weights.clone(),
            localize: false,
            precisions: [Precision::F32, c.precision],
            images: folder.clone(),
        };
        let measured = verify::verify_calibrated(
            graph,
            reference.as_ref(),
            engine.as_ref(),
            reference.as_ref(),
            &request,
        );
        let cost = match measured {
            Ok(report) => {
                let output = report
                    .comparisons
                    .iter()
                    .find(|x| x.name == "output (infer)");
                AccuracyCost {
                    engine: c.engine.clone(),
                    precision: c.precision,
                    variant,
                    weights: source.clone(),
                    max_relative_error: output.map(|o| o.max_relative_error),
                    cosine_similarity: output.map(|o| o.cosine_similarity),
                    passed: output.map(|o| o.passes(request.tolerance)),
                    top1_agreement: report.agreement.as_ref().map(|a| a.top1_share()),
                    top5_agreement: report
                        .agreement
                        .as_ref()
                        .and_then(|a| a.top5.map(|top5| top5 as f64 / a.images.max(1) as f64)),
                    images: report.agreement.as_ref().map(|a| a.data.clone()),
                    image_folder: image_folder.clone(),
                    error: None,
                }
            }
            Err(e) => AccuracyCost {
                engine: c.engine.clone(),
                precision: c.precision,
                variant,
                weights: source.clone(),
                max_relative_error: None,
                cosine_similarity: None,
                passed: None,
                top1_agreement: None,
                top5_agreement: None,
                images: None,
                image_folder: image_folder.clone(),
                error: Some(format!("{e:#}")),
            },
        };
        // A cost of other weights or images for the same configuration is replaced.
        costs.retain(|k| !k.is_for(&cost.engine, cost.precision, &cost.variant));
        costs.push(cost);
        let text = serde_json::to_string_pretty(&costs)?;
        cnnbench_graph::write_owned(&path, |out| out.write_all(text.as_bytes()))?;
    }
    Ok(costs)
}

/// The results in the folder for this model and size, ranked.
fn rank(
    runs: &Path,
    costs: &[AccuracyCost],
    graph: &cnnbench_graph::Graph,
    batches: [usize; 2],
) -> Result<Choice> {
    let records = load(&[runs.to_path_buf()], false)?;
    let input = graph.input_shape();
    let records: Vec<_> = records
        .into_iter()
        .filter(|r| r.mode == Mode::Infer && r.input == input)
        .collect();
    let mut notes = Vec::new();
    let entries = group::group(
        records,
        &aliases(None)?,
        &Cached::new(&ZooCatalog),
        Duplicates::Pool,
        Stat::Median,
        &mut notes,
    );
    Ok(choose(&entries, costs, batches[0], batches[1]))
}

/// The server runs in the folder for this model and size under the bound, ranked by
/// their peak.
fn rank_serving(
    runs: &Path,
    costs: &[AccuracyCost],
    graph: &cnnbench_graph::Graph,
    bound_ms: f64,
) -> Result<ServingChoice> {
    let records = load(&[runs.to_path_buf()], false)?;
    let input = graph.input_shape();
    let aliases = aliases(None)?;
    let catalog = Cached::new(&ZooCatalog);
    let scenario_runs = records
        .into_iter()
        .filter(|r| r.mode == Mode::Infer && r.input == input)
        // Every run carries choose's label: the device is the machine's alone.
        .map(|r| cnnbench_report::record::Record { label: None, ..r })
        .filter_map(|r| ScenarioRun::of(&r, &aliases, &catalog))
        .collect();
    let serving = Serving::build(scenario_runs);
    Ok(choose_serving(&serving.server, costs, bound_ms))
}

/// The ranking by peak load, its notes and the conclusion.
fn print_serving_choice(choice: &ServingChoice, random_weights: bool) {
    let bound = choice.bound_ms;
    outln!(
        "{} on {}: each stack and precision that ran, by the highest load it serves with p99 ≤ {bound} ms",
        choice.model,
        choice.device
    );
    let agree = choice.ranked.iter().any(|r| agreed(r.accuracy.as_ref()));
    let mut headers = vec!["Configuration", "Peak QPS", "p50 (ms)", "p99 (ms)"];
    headers.extend(cost_headers(agree));
    headers.push("Probes");
    let mut table = new_table(&headers);
    for r in &choice.ranked {
        let cost = r.accuracy.as_ref();
        let ms = |v: Option<f64>| v.map_or("–".into(), |v| format!("{v:.1}"));
        let mut row = vec![
            r.config.clone(),
            r.peak_qps.map_or("none".into(), |q| format!("{q:.1}")),
            ms(r.p50_ms),
            ms(r.p99_ms),
        ];
        row.extend(cost_cells(cost, choice.pareto.contains(&r.config), agree));
        row.push(r.probes.to_string());
        table.add_row(row);
    }
    let mut right = vec![1, 2, 3, 4, 5, headers.len() - 1];
    if agree {
        right.push(6);
    }
    align_right(&mut table, &right);
    outln!("{table}");
    outln!(
        "peak: the highest offered load (queries a second, one image each, Poisson arrivals) whose run kept its p99 latency, counted from each query's scheduled arrival, within {bound} ms; error as in `choose` without --scenario ({})",
        weights_words(random_weights)
    );
    agreement_note(choice.ranked.iter().map(|r| r.accuracy.as_ref()));
    for r in &choice.ranked {
        if let Some(why) = &r.no_valid_load {
            outln!("{}: {why}", r.config);
        }
    }
    for sentence in &choice.conclusions {
        outln!("{sentence}");
    }
}

/// Which weights the accuracy costs were measured with, in the rankings' notes.
fn weights_words(random_weights: bool) -> &'static str {
    if random_weights {
        "random weights: give --weights FILE for a trained network's"
    } else {
        "the given weights"
    }
}

/// The note under a ranking whose costs were measured on the user's images: what the
/// agreement column counts, and on which images.
fn agreement_note<'a>(costs: impl Iterator<Item = Option<&'a AccuracyCost>>) {
    let mut images: Vec<&str> = costs
        .flatten()
        .filter_map(|c| c.images.as_deref())
        .collect();
    images.sort_unstable();
    images.dedup();
    if !images.is_empty() {
        outln!(
            "top-1 / top-5 vs f32: the share of the images on which the configuration's top class is f32's / f32's class is among its five highest ({})",
            images.join("; ")
        );
    }
}

/// Whether a cost was measured on the user's images (has a top-1 agreement).
fn agreed(cost: Option<&AccuracyCost>) -> bool {
    cost.is_some_and(|c| c.top1_agreement.is_some())
}

/// The headers of [`cost_cells`]: with `agree`, the top-1/top-5 agreement after the
/// cosine.
fn cost_headers(agree: bool) -> Vec<&'static str> {
    let mut headers = vec!["Error vs f32", "Cosine"];
    if agree {
        headers.push("Top-1 / top-5 vs f32");
    }
    headers.extend(["Verified", "Pareto"]);
    headers
}

/// An accuracy cost's cells of the rankings: error, cosine, (with `agree`) the share of
/// the user's images on which it picks f32's class, verdict, and whether the row is on
/// the Pareto front.
fn cost_cells(cost: Option<&AccuracyCost>, on_front: bool, agree: bool) -> Vec<String> {
    let mut cells = vec![
        cost.and_then(|c| c.max_relative_error)
            .map_or("–".into(), |e| format!("{e:.1e}")),
        cost.and_then(|c| c.cosine_similarity)
            .map_or("–".into(), |c| format!("{c:.5}")),
    ];
    if agree {
        let share = |v: Option<f64>| v.map_or("–".into(), |v| format!("{:.1}%", 100.0 * v));
        cells.push(format!(
            "{} / {}",
            share(cost.and_then(|c| c.top1_agreement)),
            share(cost.and_then(|c| c.top5_agreement))
        ));
    }
    cells.push(verified(cost));
    cells.push(if on_front {
        "yes".into()
    } else {
        String::new()
    });
    cells
}

/// The verify verdict of an accuracy cost, in a table cell.
fn verified(cost: Option<&AccuracyCost>) -> String {
    match cost.and_then(|c| c.passed) {
        Some(true) => "PASS".into(),
        Some(false) => "FAIL".into(),
        None => cost
            .and_then(|c| c.error.as_ref())
            .map_or("–".into(), |_| "error".into()),
    }
}

fn print_choice(choice: &Choice, random_weights: bool) {
    let (small, large) = (choice.small_batch, choice.large_batch);
    outln!(
        "{} on {}: each stack and precision that ran, fastest first at batch {small}",
        choice.model,
        choice.device
    );
    let latency = format!("Latency b{small} (ms)");
    let throughput = format!("Images/s b{large}");
    let agree = choice.ranked.iter().any(|r| agreed(r.accuracy.as_ref()));
    // "% of roof" only where a run knew this machine's ceilings (`cnnbench peak`).
    let roofed = choice.ranked.iter().any(|r| r.of_roof.is_some());
    let of_roof = format!("% of roof b{small}");
    let mut headers = vec!["Configuration", latency.as_str(), throughput.as_str()];
    if roofed {
        headers.push(of_roof.as_str());
    }
    headers.extend(cost_headers(agree));
    headers.push("Flags");
    let mut table = new_table(&headers);
    for r in &choice.ranked {
        let cost = r.accuracy.as_ref();
        let mut row = vec![
            r.config.clone(),
            r.latency_ms.map_or("–".into(), |v| format!("{v:.2}")),
            r.images_per_s.map_or("–".into(), |v| format!("{v:.1}")),
        ];
        if roofed {
            row.push(
                r.of_roof
                    .map_or("–".into(), |x| format!("{:.0}%", x * 100.0)),
            );
        }
        row.extend(cost_cells(cost, choice.pareto.contains(&r.config), agree));
        row.push(
            [
                (!r.not_as_asked.is_empty()).then_some("not as asked"),
                (!r.disturbed.is_empty()).then_some("disturbed"),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(", "),
        );
        table.add_row(row);
    }
    let numbers = 2 + usize::from(roofed) + if agree { 3 } else { 2 };
    align_right(&mut table, &(1..=numbers).collect::<Vec<_>>());
    outln!("{table}");
    if roofed {
        outln!(
            "% of roof: the least time this machine's ceilings (`cnnbench peak`) allow the forward pass at batch {small}, over its median; per layer: `cnnbench profile`"
        );
    }
    outln!(
        "error: the inference output's largest difference from burn-flex's f32, relative to its largest magnitude (verify, batch 2, {}); Pareto: no other configuration is both faster at batch {small} and closer to f32",
        weights_words(random_weights)
    );
    agreement_note(choice.ranked.iter().map(|r| r.accuracy.as_ref()));
    for r in &choice.ranked {
        for why in &r.not_as_asked {
            outln!("{}: {why}", r.config);
        }
        for why in &r.disturbed {
            outln!("{}: disturbed at {why}", r.config);
        }
    }
    for sentence in &choice.conclusions {
        outln!("{sentence}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failed cell is said in one line with its first error (OpenVINO's throughput
    /// hint at a batch its requests do not split), not the three lines the run printed.
    #[test]
    fn the_reason_a_cell_failed_is_its_first_error_line() {
        let said = "\
warning: resnet50: something worth knowing
error: openvino-cpu cannot run resnet50: a batch of 1 does not split evenly among them
error: run 1 of 2 of resnet50 (batch 1, 224x224) failed (exit status 1); the runs before it are kept in runs
";
        assert_eq!(
            failure_reason(said).as_deref(),
            Some("openvino-cpu cannot run resnet50: a batch of 1 does not split evenly among them")
        );
        assert_eq!(failure_reason("killed\n"), None);
    }
}
