//! Every `$ cnnbench …` example in the README and the guide (`docs/src`) is run here,
//! and its output compared with the text on the page modulo numbers, spacing, the
//! machine's name and the harness's warnings about noisy passes (which come and go
//! with the machine's load). So an
//! example cannot rot: a changed message, column or option fails this test.
//!
//! The conventions (also in `docs/src/examples.md`):
//! * an example is a line `$ cnnbench …` in a fenced code block (continued by lines
//!   ending in `\`), followed by its output up to the next `$ ` line or the fence;
//! * a line `…` in the output stands for any number of lines;
//! * the commands of one block run one after another in one fresh folder that sees
//!   the repository's `crates/` and `docs/` (so fixture paths work, and files an
//!   example writes are there for the next example of its block);
//! * `<!-- examples: torch -->` just before a block: it needs the libtorch engines,
//!   and runs only in a `--features torch` build (`.ci/run` runs this test so);
//!   `<!-- examples: default-build -->`: it shows a build without them;
//! * `CNNBENCH_UPDATE_DOCS=1 cargo test --release -p cnnbench-cli --test doc_examples`
//!   rewrites every checked example's output with this build's (keeping a `…` cut
//!   where there was one): review the diff, then commit it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/cli sits two folders below the repository root")
        .to_path_buf()
}

/// The markdown files whose examples are checked.
fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let root = repo_root();
    let mut out = vec![root.join("README.md")];
    walk(&root.join("docs/src"), &mut out);
    out.sort();
    out
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Needs {
    Any,
    Torch,
    DefaultBuild,
}

/// One command and the output the page shows for it.
#[derive(Debug)]
struct Example {
    command: String,
    /// Line indices (0-based, in the page) of the output, `start..end`.
    output_lines: std::ops::Range<usize>,
    expected: Vec<String>,
}

/// A fenced block holding at least one example.
#[derive(Debug)]
struct Block {
    page: PathBuf,
    /// 1-based line of the opening fence, for messages.
    line: usize,
    needs: Needs,
    examples: Vec<Example>,
}

fn parse_blocks(page: &Path, text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let fence = lines[i].trim_start();
        if !fence.starts_with("```") {
            i += 1;
            continue;
        }
        let indent = lines[i].len() - fence.len();
        let needs = lines[..i]
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map_or(Needs::Any, |l| match l.trim() {
                "<!-- examples: torch -->" => Needs::Torch,
                "<!-- examples: default-build -->" => Needs::DefaultBuild,
                _ => Needs::Any,
            });
        let start = i;
        let mut end = i + 1;
        while end < lines.len() && !lines[end].trim_start().starts_with("```") {
            end += 1;
        }
        let body = |k: usize| lines[k].get(indent..).unwrap_or(lines[k].trim_start());
        let mut examples = Vec::new();
        let mut k = start + 1;
        while k < end {
            let Some(cmd) = body(k).strip_prefix("$ cnnbench") else {
                k += 1;
                continue;
            };
            let mut command = format!("cnnbench{cmd}");
            while command.ends_with('\\') && k + 1 < end {
                command.pop();
                k += 1;
                command.push_str(body(k));
            }
            k += 1;
            let out_start = k;
            while k < end && !body(k).starts_with("$ ") {
                k += 1;
            }
            examples.push(Example {
                command,
                output_lines: out_start..k,
                expected: (out_start..k).map(|j| body(j).to_string()).collect(),
            });
        }
        if !examples.is_empty() {
            blocks.push(Block {
                page: page.to_path_buf(),
                line: start + 1,
                needs,
                examples,
            });
        }
        i = end + 1;
    }
    blocks
}

/// A folder that sees the repository's `crates/` and `docs/` and nothing else.
fn sandbox() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary folder");
    for name in ["crates", "docs"] {
        std::os::unix::fs::symlink(repo_root().join(name), dir.path().join(name))
            .expect("a symbolic link in the temporary folder");
    }
    dir
}

fn run(command: &str, cwd: &Path) -> String {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_cnnbench"));
    let bin_dir = bin.parent().expect("the binary is in a folder");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("{command} 2>&1"))
        .current_dir(cwd)
        .env("PATH", path)
        .env("COLUMNS", "100")
        .env("NO_COLOR", "1")
        .output()
        .expect("sh runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Names of this machine and of the machines the pages were written on, which the
/// comparison treats as one.
fn machine_names(sandbox: &Path) -> Vec<String> {
    let mut names: Vec<String> = [
        "Intel(R) Xeon(R) Processor",
        "intel-r-xeon-r-processor",
        "AMD EPYC",
        "amd-epyc",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let results = sandbox.join("results");
    for dir in std::fs::read_dir(&results).into_iter().flatten().flatten() {
        let folder = dir.file_name().to_string_lossy().into_owned();
        if let Some((machine, _engine)) = folder.rsplit_once('_') {
            names.push(machine.to_string());
        }
        for file in std::fs::read_dir(dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let Ok(text) = std::fs::read_to_string(file.path()) else {
                continue;
            };
            let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else {
                continue;
            };
            for field in [&json["machine"]["cpu"], &json["engine"]["device_name"]] {
                if let Some(name) = field.as_str() {
                    names.push(name.to_string());
                }
            }
        }
    }
    names.retain(|n| !n.is_empty());
    // Longest first, so that a name is not replaced piecemeal by a shorter one.
    names.sort_by_key(|n| std::cmp::Reverse(n.len()));
    names.dedup();
    names
}

/// A line as compared: machine names and numbers replaced, spacing and table padding
/// dropped.
fn normalise(line: &str, machines: &[String]) -> String {
    let mut s = line.to_string();
    for name in machines {
        s = s.replace(name.as_str(), "<machine>");
    }
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|d| d.is_ascii_digit() || *d == '.' || *d == ',')
            {
                chars.next();
            }
            out.push('#');
        } else {
            out.push(c);
        }
    }
    let collapsed: String = out.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.starts_with('|') {
        let cells: Vec<String> = collapsed
            .split('|')
            .map(|c| {
                let c = c.trim();
                if !c.is_empty() && c.chars().all(|x| x == '-' || x == ':') {
                    "-".to_string()
                } else {
                    c.to_string()
                }
            })
            .collect();
        cells.join("|")
    } else {
        collapsed
    }
}

/// The lines compared: not blank, and not the harness's warnings about noisy
/// passes (`warning:` lines, and the report's notes that repeat them), which come and
/// go with the machine's load.
fn kept(lines: &[String]) -> Vec<&String> {
    lines
        .iter()
        .filter(|l| {
            let l = l.trim();
            let noise = l.starts_with("warning:")
                || (l.starts_with("- ") && l.contains("times vary widely"))
                // The report's heading over its notes, there only when a note is.
                || l == "Notes:";
            !(l.is_empty() || noise)
        })
        .collect()
}

/// Whether `actual` matches `expected`, where a `…` line in `expected` matches any
/// number of lines.
fn matches(expected: &[String], actual: &[String]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first == "…" => {
            (0..=actual.len()).any(|skip| matches(rest, &actual[skip..]))
        }
        Some((first, rest)) => actual
            .split_first()
            .is_some_and(|(a, arest)| a == first && matches(rest, arest)),
    }
}

/// The page's output for an example rewritten with this build's: the same cut where
/// the page had a `…`.
fn updated_output(expected: &[String], actual: &[String]) -> Vec<String> {
    let Some(cut) = expected.iter().position(|l| l.trim() == "…") else {
        return actual.to_vec();
    };
    let tail = expected.len() - cut - 1;
    if cut + tail >= actual.len() {
        return actual.to_vec();
    }
    let mut out = actual[..cut].to_vec();
    out.push("…".to_string());
    out.extend_from_slice(&actual[actual.len() - tail..]);
    out
}

#[test]
fn every_example_in_the_readme_and_the_guide_runs_as_shown() {
    let torch_build = cfg!(feature = "torch");
    let update = std::env::var_os("CNNBENCH_UPDATE_DOCS").is_some();
    let mut failures = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("a readable page");
        let blocks = parse_blocks(&page, &text);
        let mut rewrites: Vec<(std::ops::Range<usize>, Vec<String>)> = Vec::new();
        for block in &blocks {
            let runs_here = match block.needs {
                Needs::Any => true,
                Needs::Torch => torch_build,
                Needs::DefaultBuild => !torch_build,
            };
            if !runs_here {
                continue;
            }
            let dir = sandbox();
            for ex in &block.examples {
                let raw = run(&ex.command, dir.path());
                let actual_lines: Vec<String> = raw.lines().map(str::to_string).collect();
                let machines = machine_names(dir.path());
                let norm = |ls: Vec<&String>| -> Vec<String> {
                    ls.into_iter()
                        .map(|l| {
                            if l.trim() == "…" {
                                "…".to_string()
                            } else {
                                normalise(l, &machines)
                            }
                        })
                        .collect()
                };
                let expected = norm(kept(&ex.expected));
                let actual = norm(kept(&actual_lines));
                checked += 1;
                if !matches(&expected, &actual) {
                    if update {
                        let indent = " ".repeat(
                            text.lines()
                                .nth(block.line - 1)
                                .map_or(0, |l| l.len() - l.trim_start().len()),
                        );
                        let new: Vec<String> = updated_output(&ex.expected, &actual_lines)
                            .into_iter()
                            .map(|l| format!("{indent}{l}").trim_end().to_string())
                            .collect();
                        rewrites.push((ex.output_lines.clone(), new));
                    } else {
                        failures.push(format!(
                            "{}:{}: `{}`\n--- the page shows (normalised):\n{}\n--- this build prints (normalised):\n{}\n--- raw output:\n{raw}",
                            block.page.display(),
                            block.line,
                            ex.command,
                            expected.join("\n"),
                            actual.join("\n"),
                        ));
                    }
                }
            }
        }
        if update && !rewrites.is_empty() {
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            rewrites.sort_by_key(|r| std::cmp::Reverse(r.0.start));
            for (range, new) in rewrites {
                lines.splice(range, new);
            }
            std::fs::write(&page, lines.join("\n") + "\n").expect("the page is writable");
        }
    }
    assert!(
        checked >= 10,
        "only {checked} examples found: is the parser broken?"
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} examples differ from their pages (rerun with CNNBENCH_UPDATE_DOCS=1 to rewrite them, then review the diff):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn the_comparison_ignores_numbers_spacing_and_machines_but_not_words() {
    let machines = vec!["AMD EPYC".to_string()];
    assert_eq!(
        normalise("| resnet18 | AMD EPYC |   52.80 ± 8.24 |", &machines),
        normalise("|resnet18|AMD EPYC|1,234.5 ± 1|", &machines)
    );
    assert_eq!(
        normalise("|---|---:|", &machines),
        normalise("|-----------|------|", &machines)
    );
    assert_ne!(
        normalise("resnet18: wrote results", &machines),
        normalise("resnet18: saved results", &machines)
    );
    let e = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(matches(&e(&["a", "…", "z"]), &e(&["a", "b", "c", "z"])));
    assert!(!matches(&e(&["a", "…", "z"]), &e(&["a", "b", "y"])));
    assert!(!matches(&e(&["a", "b"]), &e(&["a", "b", "c"])));
    assert_eq!(
        updated_output(&e(&["1", "…", "9"]), &e(&["a", "b", "c", "d"])),
        e(&["a", "…", "d"])
    );
}

#[test]
fn examples_are_found_with_their_outputs_and_markers() {
    let page = "text\n<!-- examples: torch -->\n```\n$ cnnbench models \\\n    --json\nout 1\n$ cnnbench engines\nout 2\n```\n```sh\ncargo build\n```\n";
    let blocks = parse_blocks(Path::new("p.md"), page);
    assert_eq!(blocks.len(), 1);
    assert_eq!(blocks[0].needs, Needs::Torch);
    let ex = &blocks[0].examples;
    assert_eq!(ex[0].command, "cnnbench models     --json");
    assert_eq!(ex[0].expected, vec!["out 1"]);
    assert_eq!(ex[1].command, "cnnbench engines");
    assert_eq!(ex[1].output_lines, 7..8);
}
