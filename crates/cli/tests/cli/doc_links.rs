//! Every relative link in the README and the guide (`docs/src`) points at a file that
//! exists, and every `#anchor` at a heading of its page; a link from the guide stays
//! inside `docs/src`, since the book carries nothing else. mdbook has no link checker
//! of its own, so this test is it.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/cli sits two folders below the repository root")
        .to_path_buf()
}

/// The text of a page with fenced code blocks and inline code blanked out, so that
/// example output that looks like a link is not taken for one.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            out.push('\n');
            continue;
        }
        if fenced {
            out.push('\n');
            continue;
        }
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
                out.push(' ');
            } else {
                out.push(if in_code { ' ' } else { c });
            }
        }
        out.push('\n');
    }
    out
}

/// Targets of `[text](target)`, `![alt](target)` and `src="target"` / `href="target"`.
fn link_targets(text: &str) -> Vec<String> {
    let text = prose(text);
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(end) = rest.find(')') {
            let target = rest[..end].split_whitespace().next().unwrap_or("");
            out.push(target.trim_matches(['<', '>']).to_string());
        }
    }
    for attr in ["src=\"", "href=\""] {
        let mut rest = text.as_str();
        while let Some(i) = rest.find(attr) {
            rest = &rest[i + attr.len()..];
            if let Some(end) = rest.find('"') {
                out.push(rest[..end].to_string());
            }
        }
    }
    out
}

/// The anchors mdbook (and GitHub) give a page's headings: lower case, spaces to `-`,
/// other punctuation dropped, `-1`, `-2`, … for repeats.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim();
        let id: String = title
            .chars()
            .filter_map(|c| {
                if c.is_alphanumeric() || c == '_' || c == '-' {
                    Some(c.to_lowercase().collect::<String>())
                } else if c.is_whitespace() {
                    Some("-".to_string())
                } else {
                    None
                }
            })
            .collect();
        let mut unique = id.clone();
        let mut n = 1;
        while seen.contains(&unique) {
            unique = format!("{id}-{n}");
            n += 1;
        }
        seen.insert(unique);
    }
    seen
}

/// `a/b/../c` → `a/c`, without touching the file system.
fn tidy(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Every broken link of `page`; `book` is the folder links must stay inside, if any.
fn broken_links(page: &Path, book: Option<&Path>) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(page) else {
        return vec![format!("{}: unreadable", page.display())];
    };
    let dir = page.parent().unwrap_or(Path::new("."));
    let mut problems = Vec::new();
    for target in link_targets(&text) {
        if target.is_empty()
            || target.contains("://")
            || target.starts_with("mailto:")
            || target.starts_with("//")
        {
            continue;
        }
        let (file, anchor) = match target.split_once('#') {
            Some((f, a)) => (f, Some(a)),
            None => (target.as_str(), None),
        };
        let resolved = if file.is_empty() {
            page.to_path_buf()
        } else {
            tidy(&dir.join(file))
        };
        let say = |what: &str| format!("{}: link `{target}` {what}", page.display());
        if let Some(book) = book {
            if !resolved.starts_with(tidy(book)) {
                problems.push(say("leaves docs/src, which the book does not carry"));
                continue;
            }
        }
        if !resolved.exists() {
            problems.push(say("points at a file that does not exist"));
            continue;
        }
        if let Some(anchor) = anchor {
            let is_page = resolved.extension().is_some_and(|e| e == "md");
            let found = is_page
                && std::fs::read_to_string(&resolved)
                    .map(|t| anchors(&t).contains(anchor))
                    .unwrap_or(false);
            if !found {
                problems.push(say("names an anchor that page does not have"));
            }
        }
    }
    problems
}

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            markdown_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

#[test]
fn every_relative_link_in_the_readme_and_the_guide_resolves() {
    let root = repo_root();
    let book = root.join("docs/src");
    let mut pages = Vec::new();
    markdown_files(&book, &mut pages);
    assert!(
        pages.len() > 10,
        "the guide's pages are missing from {}",
        book.display()
    );
    let mut problems = broken_links(&root.join("README.md"), None);
    for page in &pages {
        problems.extend(broken_links(page, Some(&book)));
    }
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_broken_link_or_anchor_is_caught() {
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("src");
    std::fs::create_dir_all(book.join("sub")).unwrap();
    std::fs::write(
        book.join("a.md"),
        "# A page\n\n## Its part: two\n\n[fine](sub/b.md) [fine too](#its-part-two)\n\n```\n[not a link](nowhere.md)\n```\n",
    )
    .unwrap();
    std::fs::write(
        book.join("sub/b.md"),
        "# B\n\n[back](../a.md#a-page) [gone](../missing.md) [bad anchor](../a.md#no-such-part) [out](../../outside.md) `[code](x.md)`\n",
    )
    .unwrap();
    std::fs::write(tmp.path().join("outside.md"), "# Outside\n").unwrap();
    assert!(broken_links(&book.join("a.md"), Some(&book)).is_empty());
    let problems = broken_links(&book.join("sub/b.md"), Some(&book));
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(problems[0].contains("`../missing.md` points at a file that does not exist"));
    assert!(problems[1].contains("`../a.md#no-such-part` names an anchor"));
    assert!(problems[2].contains("`../../outside.md` leaves docs/src"));
}

#[test]
fn anchors_follow_mdbook() {
    let a =
        anchors("# `cnnbench run`\n## The libtorch engines (optional)\n## Results\n## Results\n");
    let want: BTreeSet<String> = [
        "cnnbench-run",
        "the-libtorch-engines-optional",
        "results",
        "results-1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(a, want);
}
