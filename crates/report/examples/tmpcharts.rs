fn main() {
    let a: Vec<String> = std::env::args().collect();
    let loaded = cnnbench_report::load_paths(&[a[1].clone().into()], false).unwrap();
    let aliases = cnnbench_report::Aliases::from_file(std::path::Path::new(&a[2])).unwrap();
    let opts = cnnbench_report::ReportOptions {
        layout: cnnbench_report::Layout::Legacy,
        ..Default::default()
    };
    let r = cnnbench_report::Report::build(
        loaded.records,
        &aliases,
        &cnnbench_report::NoCatalog,
        &opts,
    )
    .unwrap();
    cnnbench_report::charts::write_charts(&r, std::path::Path::new(&a[3])).unwrap();
}
