fn main() {
    let args: Vec<String> = std::env::args().collect();
    let loaded = cnnbench_report::load_paths(&[args[1].clone().into()], false).unwrap();
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    let aliases = cnnbench_report::Aliases::from_file(std::path::Path::new(&args[2])).unwrap();
    let mut opts = cnnbench_report::ReportOptions::default();
    opts.layout = if args.get(3).map(|s| s.as_str()) == Some("legacy") {
        cnnbench_report::Layout::Legacy
    } else {
        cnnbench_report::Layout::Default
    };
    opts.speedups = cnnbench_report::SpeedupRequest::All;
    let r = cnnbench_report::Report::build(
        loaded.records,
        &aliases,
        &cnnbench_report::NoCatalog,
        &opts,
    )
    .unwrap();
    let f = match args.get(4).map(|s| s.as_str()) {
        Some("pretty") => cnnbench_report::Format::Pretty,
        Some("csv") => cnnbench_report::Format::Csv,
        Some("json") => cnnbench_report::Format::Json,
        Some("html") => cnnbench_report::Format::Html,
        _ => cnnbench_report::Format::Markdown,
    };
    print!("{}", f.exporter().render(&r).unwrap());
}
