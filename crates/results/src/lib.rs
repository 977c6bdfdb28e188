//! What a measurement is, for everyone who writes or reads one: the result file schema
//! (`cnnbench-result` version 2; version 1 files still read), the timed [`Quantity`]s and the statistics of timing
//! samples (summaries, quantiles, the median's confidence interval, the bootstrap).
//!
//! The harness (`cnnbench-bench`) fills these types in and the report
//! (`cnnbench-report`) reads them; neither needs the other.

pub mod engine_types;
pub mod folders;
pub mod noise;
pub mod peak;
pub mod profile;
pub mod quantity;
pub mod quantization;
pub mod result;
pub mod roofline;
pub mod scenario;
pub mod spec;
pub mod stats;
pub mod validity;

/// Mode, precision, engine settings and the engine's record: part of the schema.
pub use engine_types::{EngineInfo, Mode, Phase, Precision};
pub use quantity::{Quantity, UnknownQuantity};
pub use result::{
    flops_per_pass, AllocatorRecord, BatchProbe, BatchSearch, BenchResult, MachineInfo,
    MemoryRecord, ModelRecord, ProbeOutcome, Round, RunConfig, StopReason, StopRecord, Throughput,
    ToolInfo, RESULT_FORMAT, RESULT_VERSION, RESULT_VERSIONS_READ,
};
pub use spec::{Batches, DataParallel, EngineSettings, ImageSize, ModelRef, RunSpec, SettingsMap};
pub use stats::{Percentiles, Summary};
pub use validity::{ColdStart, GpuSignals, Signals, Validity, Verdict};

/// Bytes in binary units, e.g. "2.25 GiB".
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.2} {}", UNITS[unit])
    }
}

/// A number as an error message shows it: as given where it is of a readable size
/// (`20`, `0.5`), in scientific notation where plain digits would run to hundreds
/// (`1e300`, `5e-324`), and NaN or infinity by name.
pub fn number(x: f64) -> String {
    let magnitude = x.abs();
    if x.is_finite() && (magnitude == 0.0 || (1e-4..1e15).contains(&magnitude)) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// Text from a file or a user (a model, device or file name, a label) made safe to print
/// on a terminal or write into a table, a heading or a comment line: control characters
/// (ESC, CR, newlines, NEL) and the characters that act like them are shown escaped
/// (`\n`, `\u{1b}`) instead of acting: the line and paragraph separators U+2028 and
/// U+2029 (line breaks to YAML 1.1, which `plan --k8s`'s comment lines are read as) and
/// the bidirectional controls (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C),
/// which make text read in another order than it is written.
pub fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if acts_on_the_text(c) {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Writes `line` and a newline to stderr, inert ([`inert_for_terminal`]), in one write.
/// A stderr that cannot be written is left unsaid: there is nowhere else to say it
/// (`eprintln!` would panic). The CLI's `errln!` and the engines' warnings both end here.
pub fn inert_line_on_stderr(line: &str) {
    use std::io::Write;
    let line = format!("{}\n", inert_for_terminal(line));
    if std::io::stderr().lock().write_all(line.as_bytes()).is_err() {
        // Nothing to do: the message had nowhere to go.
    }
}

/// Text on its way to a terminal, whole lines of it (everything cnnbench prints passes
/// through here): every character that acts on the text except the newline and the tab
/// is written as JSON's `\uXXXX` escape, so a name from a file cannot move the cursor,
/// retitle the window, rewrite a line or reorder it, and a JSON text printed this way
/// still reads as the same JSON (its own escapes are plain characters). Borrowed when
/// there is nothing to escape.
pub fn inert_for_terminal(text: &str) -> std::borrow::Cow<'_, str> {
    let acts = |c: char| c != '\n' && c != '\t' && acts_on_the_text(c);
    if !text.chars().any(acts) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut inert = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if acts(c) {
            // Every character that acts on the text is in the Basic Multilingual Plane.
            inert.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            inert.push(c);
        }
    }
    std::borrow::Cow::Owned(inert)
}

/// Whether `c` moves, breaks or reorders text rather than being a character of it: a
/// control character, a line or paragraph separator, or a bidirectional control.
pub fn acts_on_the_text(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}'
                | '\u{2029}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{061c}'
        )
}

#[cfg(test)]
mod tests {
    use super::{number, printable};

    /// A bound of 1e300 was printed in 301 digits. (#63)
    #[test]
    fn a_number_in_a_message_is_short_whatever_its_size() {
        assert_eq!(number(20.0), "20");
        assert_eq!(number(0.5), "0.5");
        assert_eq!(number(1e300), "1e300");
        assert_eq!(number(5e-324), "5e-324");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(-f64::INFINITY), "-inf");
        assert!(number(-1.5e-9).len() < 10, "{}", number(-1.5e-9));
    }

    /// ESC, BEL, CR, a C1 control and a bidi override from a file reach the terminal as
    /// text; the newline and tab of the lines themselves are kept; JSON stays the same JSON.
    #[test]
    fn text_for_the_terminal_keeps_lines_and_escapes_what_acts() {
        let hostile = "a\u{1b}]0;title\u{7}b\rc\u{9b}d\u{202e}e\u{7f}\tf\ng";
        let shown = super::inert_for_terminal(hostile);
        assert_eq!(
            shown,
            "a\\u001b]0;title\\u0007b\\u000dc\\u009bd\\u202ee\\u007f\tf\ng"
        );
        assert!(matches!(
            super::inert_for_terminal("résumé\tok\n"),
            std::borrow::Cow::Borrowed(_)
        ));
        let json =
            serde_json::to_string(&serde_json::json!({ "name": "x\u{9b}\u{2028}\u{202e}y" }))
                .unwrap();
        let read: serde_json::Value =
            serde_json::from_str(&super::inert_for_terminal(&json)).unwrap();
        assert_eq!(read["name"], "x\u{9b}\u{2028}\u{202e}y");
    }

    /// U+2028 in a matrix file's name started a new line of `plan --k8s`'s YAML (a YAML
    /// 1.1 line break) and a key with it; bidi overrides made a name read backwards.
    #[test]
    fn line_separators_and_bidi_controls_are_shown_escaped() {
        for c in [
            '\n', '\r', '\u{1b}', '\u{85}', '\u{2028}', '\u{2029}', '\u{202a}', '\u{202e}',
            '\u{2066}', '\u{2069}', '\u{200e}', '\u{200f}', '\u{061c}',
        ] {
            let shown = printable(&format!("a{c}b"));
            assert_eq!(shown, format!("a{}b", c.escape_default()), "{c:?}");
            assert!(!shown.contains(c), "{c:?}");
        }
        for kept in ["résumé", "日本語", "a\u{2010}b", "a\u{2030}b", "a\u{2065}b"] {
            assert_eq!(printable(kept), kept);
        }
    }
}
