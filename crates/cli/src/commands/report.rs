//! `cnnbench report`: tables, speed-ups, CSV/JSON/HTML and charts from result files,
//! ours and the original cnn-benchmarks suite's. The work is done by the
//! `cnnbench-report` crate; this file parses the flags and writes the output.

use anyhow::bail;
use cnnbench_report::{
    charts, profile, Aliases, Duplicates, FamilyPlace, Format, Layout, ModelCatalog, ModelFacts,
    Report, ReportOptions, SpeedupRequest, Stat,
};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(after_help = "Examples:
  cnnbench report results/
  cnnbench report results/ --speedups
  cnnbench report results/ --conclusions
  cnnbench report old-outputs/ --layout legacy --aliases gpus.toml
  cnnbench report results/ --format html --output report.html
  cnnbench report results/ --charts charts/ --format csv > results.csv")]
pub struct ReportArgs {
    /// Result files or folders (searched recursively for *.json): cnnbench results and
    /// the original cnn-benchmarks suite's files.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Output format [default: pretty on a terminal, markdown when piped, or from the
    /// extension of --output].
    #[arg(long, short = 'f', value_enum)]
    pub format: Option<FormatArg>,
    /// Write to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Table layout: `legacy` prints the original README's |GPU|cuDNN|Forward|Backward|Total| tables.
    #[arg(long, value_enum, default_value_t = LayoutArg::Default)]
    pub layout: LayoutArg,
    /// Statistic for tables and speed-ups [default: mean in the legacy layout, median otherwise].
    #[arg(long, value_enum)]
    pub stat: Option<StatArg>,
    /// Add ± the standard deviation to every time.
    #[arg(long)]
    pub with_std: bool,
    /// Speed-up lines: alone, for every pair of configurations sharing at least 3
    /// models; with A B, for configurations matching A and B (full name, device or
    /// engine). Repeat for more pairs. Put it after the paths.
    #[arg(long, num_args = 0..=2, value_names = ["A", "B"], action = clap::ArgAction::Append)]
    pub speedups: Option<Vec<String>>,
    /// The original README's conclusions: for every two configurations that differ in one
    /// way only (device, software such as cuDNN against nn, or precision) and share at
    /// least 2 trusted models, "A is x to y faster than B across N models" with the
    /// geometric mean and its 95% interval; and what could not be concluded, with why.
    #[arg(long)]
    pub conclusions: bool,
    /// TOML file of display names: [devices] "raw name" = "display name", and [models].
    #[arg(long, value_name = "FILE")]
    pub aliases: Option<PathBuf>,
    /// What to do with several runs of the same model and configuration.
    #[arg(long, value_enum, default_value_t = DuplicatesArg::Pool)]
    pub duplicates: DuplicatesArg,
    /// Fail on a file that is not a result instead of skipping it with a warning.
    #[arg(long)]
    pub strict: bool,
    /// Also write charts (SVG and PNG) into DIR: one per model and an overview.
    #[arg(long, value_name = "DIR")]
    pub charts: Option<PathBuf>,
    /// Only these models (repeatable; zoo names, aliases or legacy names).
    #[arg(long = "model", short = 'm', value_name = "NAME")]
    pub models: Vec<String>,
    /// Leave out the models overview table.
    #[arg(long)]
    pub no_overview: bool,
    /// Add what each row paid before its first timed pass: seconds to prepare the
    /// session (weights, plans, compilation) and of the first (warm-up) pass.
    #[arg(long)]
    pub cold_start: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum FormatArg {
    Pretty,
    Markdown,
    Csv,
    Json,
    Html,
}

#[derive(Clone, Copy, PartialEq, clap::ValueEnum)]
pub enum LayoutArg {
    Default,
    Legacy,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum StatArg {
    Mean,
    Median,
    Min,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum DuplicatesArg {
    /// One row with the samples of every run, and the run count.
    Pool,
    /// One row per run.
    Separate,
    /// The run with the lowest total.
    Fastest,
    /// The most recent run.
    Latest,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Pretty => Format::Pretty,
            FormatArg::Markdown => Format::Markdown,
            FormatArg::Csv => Format::Csv,
            FormatArg::Json => Format::Json,
            FormatArg::Html => Format::Html,
        }
    }
}

impl From<StatArg> for Stat {
    fn from(s: StatArg) -> Stat {
        match s {
            StatArg::Mean => Stat::Mean,
            StatArg::Median => Stat::Median,
            StatArg::Min => Stat::Min,
        }
    }
}

impl From<DuplicatesArg> for Duplicates {
    fn from(d: DuplicatesArg) -> Duplicates {
        match d {
            DuplicatesArg::Pool => Duplicates::Pool,
            DuplicatesArg::Separate => Duplicates::Separate,
            DuplicatesArg::Fastest => Duplicates::Fastest,
            DuplicatesArg::Latest => Duplicates::Latest,
        }
    }
}

/// The zoo as the report's source of model facts (depth, parameters, MACs, errors).
pub struct ZooCatalog;

impl ModelCatalog for ZooCatalog {
    fn canonical_name(&self, name: &str) -> Option<String> {
        cnnbench_zoo::find(name).map(|e| e.name.to_string())
    }

    fn facts(&self, name: &str, input: [usize; 3]) -> Option<ModelFacts> {
        let entry = cnnbench_zoo::find(name)?;
        let g = (entry.build)(input).ok()?;
        Some(ModelFacts {
            depth: g.depth(),
            params: g.params(),
            macs: g.macs(),
            top1_error: g.info().top1_error,
            top5_error: g.info().top5_error,
        })
    }

    fn family(&self, name: &str) -> Option<FamilyPlace> {
        let wanted = cnnbench_zoo::find(name)?;
        let rank = cnnbench_zoo::entries()
            .iter()
            .position(|e| e.name == wanted.name)?;
        Some(FamilyPlace {
            family: wanted.family.to_string(),
            rank,
        })
    }
}

/// Loads result files with warnings on stderr; fails when there is nothing to use.
pub fn load(
    paths: &[PathBuf],
    strict: bool,
) -> anyhow::Result<Vec<cnnbench_report::record::Record>> {
    let loaded = cnnbench_report::load_paths(paths, strict)?;
    for w in &loaded.warnings {
        errln!("warning: {w}");
    }
    if loaded.records.is_empty() {
        let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        let why = if loaded.files == 0 {
            "no .json files there".to_string()
        } else {
            format!("{} files, none of them a result", loaded.files)
        };
        bail!(
            "no benchmark results in {} ({why}); run `cnnbench run` to make some, or give the folder it wrote them to",
            shown.join(", ")
        );
    }
    Ok(loaded.records)
}

/// Reads `--aliases`, or none.
pub fn aliases(path: Option<&Path>) -> anyhow::Result<Aliases> {
    match path {
        Some(p) => Aliases::from_file(p),
        None => Ok(Aliases::default()),
    }
}

/// Writes a document to FILE (through a temporary file, so a reader never sees half of
/// it) or to standard output.
pub fn emit(text: &str, output: Option<&Path>) -> anyhow::Result<()> {
    match output {
        Some(path) => {
            let dir = path
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            if !dir.is_dir() {
                bail!(
                    "cannot write {}: folder {} does not exist",
                    path.display(),
                    dir.display()
                );
            }
            // Whole or not at all: a full disk leaves the previous report, no `.tmp` file.
            cnnbench_graph::write_replacing(path, |w| w.write_all(text.as_bytes()))
                .map_err(|e| anyhow::anyhow!(e))?;
            errln!("wrote {}", path.display());
            Ok(())
        }
        None => {
            crate::commands::out::text(text);
            Ok(())
        }
    }
}

fn speedup_request(values: Option<&Vec<String>>) -> anyhow::Result<SpeedupRequest> {
    match values {
        None => Ok(SpeedupRequest::None),
        Some(v) if v.is_empty() => Ok(SpeedupRequest::All),
        Some(v) if v.len() % 2 == 0 => {
            Ok(SpeedupRequest::Pairs(v.chunks(2).map(|c| (c[0].clone(), c[1].clone())).collect()))
        }
        Some(v) => bail!(
            "--speedups takes no value (every pair) or two configurations A B, but got \"{}\"; put the result paths before --speedups",
            v.join("\" \"")
        ),
    }
}

/// The report's options as the command line sets them (with or without profiles).
fn report_options(args: &ReportArgs, speedups: SpeedupRequest) -> ReportOptions {
    ReportOptions {
        stat: args.stat.map(Stat::from),
        layout: if args.layout == LayoutArg::Legacy {
            Layout::Legacy
        } else {
            Layout::Default
        },
        with_std: args.with_std,
        duplicates: args.duplicates.into(),
        speedups,
        models: args.models.clone(),
        overview: !args.no_overview,
        cold_start: args.cold_start,
        conclusions: args.conclusions,
    }
}

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let format: Format = match (args.format, &args.output) {
        (Some(f), _) => f.into(),
        (None, Some(path)) => Format::from_extension(path).unwrap_or(Format::Markdown),
        (None, None) if std::io::stdout().is_terminal() => Format::Pretty,
        (None, None) => Format::Markdown,
    };
    let mut speedups = speedup_request(args.speedups.as_ref())?;
    if format == Format::Html && speedups == SpeedupRequest::None {
        speedups = SpeedupRequest::All;
    }
    let aliases = aliases(args.aliases.as_deref())?;
    // Profiles (`cnnbench profile --json`) are drawn beside the results.
    let (profiles, profile_warnings) = profile::load_profiles(&args.paths);
    for w in &profile_warnings {
        errln!("warning: {w}");
    }
    if !profiles.is_empty() {
        return report_with_profiles(&args, format, speedups, &aliases, &profiles);
    }
    let records = load(&args.paths, args.strict)?;
    let opts = report_options(&args, speedups);
    let report = Report::build(records, &aliases, &ZooCatalog, &opts)?;
    if let Some(dir) = &args.charts {
        let written = charts::write_result_charts(&report, dir)?;
        errln!("wrote {} charts to {}", written.len(), dir.display());
    }
    let text = format.exporter().render(&report)?;
    emit(&text, args.output.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

/// `report` when profiles are among the paths: their charts and HTML sections, plus the
/// usual report of any results beside them, with every chart kind `run` writes (the
/// result loader's note that a profile is not a result is not repeated: it is told
/// apart by its kind, `LoadWarning::is_profile`).
fn report_with_profiles(
    args: &ReportArgs,
    format: Format,
    speedups: SpeedupRequest,
    aliases: &Aliases,
    profiles: &[profile::LoadedProfile],
) -> anyhow::Result<ExitCode> {
    let loaded = cnnbench_report::load_paths(&args.paths, false)?;
    for w in loaded.warnings.iter().filter(|w| !w.is_profile()) {
        if args.strict {
            let why = w.strip_prefix("skipping ").unwrap_or(w.as_str());
            bail!("{why} (drop --strict to skip such files with a warning)");
        }
        errln!("warning: {w}");
    }
    if let Some(dir) = &args.charts {
        let written = charts::profile::write_profile_charts(profiles, dir)?;
        errln!(
            "wrote {} profile charts to {}",
            written.len(),
            dir.display()
        );
    }
    let report = if loaded.records.is_empty() {
        None
    } else {
        let opts = report_options(args, speedups);
        let report = Report::build(loaded.records, aliases, &ZooCatalog, &opts)?;
        if let Some(dir) = &args.charts {
            let written = charts::write_result_charts(&report, dir)?;
            errln!("wrote {} charts to {}", written.len(), dir.display());
        }
        Some(report)
    };
    let section = charts::profile::html_section(profiles)?;
    let text = match (format, &report) {
        (Format::Html, Some(report)) => charts::profile::insert_before_body_end(
            &format.exporter().render(report)?,
            &section,
        ),
        (Format::Html, None) => format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>cnnbench profiles</title>\n<style>body{{font-family:sans-serif;margin:2rem}}figure svg{{max-width:100%;height:auto}}</style>\n</head>\n<body>\n<h1>cnnbench profiles</h1>\n{section}</body>\n</html>\n"
        ),
        (_, report) => {
            let mut text = match report {
                Some(r) => format.exporter().render(r)?,
                None => String::new(),
            };
            for p in profiles {
                let section = format!(
                    "\nprofile: {}\n{}",
                    p.path.display(),
                    super::profile::profile_text(&p.doc, 10)
                );
                // A profile's names reach markdown as text, as the results' do; its tables'
                // `|` stay, so that they still render as tables (a `|` in a name splits its
                // cell, as the terminal table does not, but starts no markup).
                if format == Format::Markdown {
                    let cells: Vec<String> = section
                        .split('|')
                        .map(cnnbench_report::export::escape_markdown)
                        .collect();
                    text.push_str(&cells.join("|"));
                } else {
                    text.push_str(&section);
                }
            }
            text
        }
    };
    emit(&text, args.output.as_deref())?;
    Ok(ExitCode::SUCCESS)
}
