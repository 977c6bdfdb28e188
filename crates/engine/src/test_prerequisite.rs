//! Tests whose prerequisite (root, a Python with onnxruntime, no GPU, …) may be missing
//! on a developer's machine. Such a test never passes green in silence: it says on the
//! real stderr (past the test harness's capture) that it skipped and why, the test
//! program counts its skips when it exits, and where the prerequisites are installed
//! (`.ci/run` sets [`REQUIRE_VARIABLE`]) a missing one fails the test instead.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;

/// Set (to anything but empty or `0`) where every test prerequisite is installed: a
/// missing one is then a failure. `.ci/run` sets it.
pub const REQUIRE_VARIABLE: &str = "CNNBENCH_TESTS_REQUIRE_ALL";

static SKIPPED: AtomicUsize = AtomicUsize::new(0);
static COUNT_AT_EXIT: Once = Once::new();

/// Whether [`REQUIRE_VARIABLE`] asks for every prerequisite.
pub fn required() -> bool {
    std::env::var(REQUIRE_VARIABLE).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The test `test` cannot run here because `missing`: says so and counts it, or panics
/// where every prerequisite is required. The caller returns right after.
pub fn skip_missing(test: &str, missing: &str) {
    if required() {
        panic!("{test}: {missing}, and {REQUIRE_VARIABLE} asks for every test's prerequisite (install it, or unset the variable to skip)");
    }
    say_skipped(test, missing);
}

/// The test `test` does not apply to this machine (`why`: a GPU machine, where a
/// script of its own covers it): said and counted, never a failure.
pub fn skip_not_applicable(test: &str, why: &str) {
    say_skipped(test, why);
}

fn say_skipped(test: &str, why: &str) {
    SKIPPED.fetch_add(1, Ordering::SeqCst);
    COUNT_AT_EXIT.call_once(|| {
        // SAFETY: `count_skips` is an `extern "C" fn()` that touches only a static
        // atomic and stderr; registering it has no other precondition.
        unsafe {
            libc::atexit(count_skips);
        }
    });
    // Straight to the process's stderr: the harness captures only `eprintln!`.
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}

extern "C" fn count_skips() {
    let skipped = SKIPPED.load(Ordering::SeqCst);
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: {skipped} test(s) of this test program for a missing prerequisite or another machine (lines above); {REQUIRE_VARIABLE}=1 makes a missing prerequisite a failure"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_is_counted_and_a_required_prerequisite_fails() {
        let before = SKIPPED.load(Ordering::SeqCst);
        skip_not_applicable(
            "test_prerequisite's own test",
            "it checks that a skip is counted (not a real skip)",
        );
        assert!(SKIPPED.load(Ordering::SeqCst) > before);
        if required() {
            let panicked = std::panic::catch_unwind(|| skip_missing("this test", "no root"));
            assert!(panicked.is_err(), "a required prerequisite must fail");
        }
    }
}
