//! Sweeps for `cnnbench run`: batch sizes and image sizes as lists and ranges
//! (`-b 1,2,4,8`, `-b 1..64`, `--image-size 128,224,320`), and `-b max`'s probes: child
//! processes (`cnnbench run --job -`, given a probe job) that run one pass at a candidate
//! batch and report the memory they used. How a probe ended and the search itself are
//! `cnnbench_bench::batch_search`'s; a child that runs out of memory (burn-flex aborts the
//! process when an allocation fails) is caught there, reported and recorded.

use super::common::ImageSize;
use anyhow::{Context, Result};
use cnnbench_bench::batch_search::classify_probe;
use cnnbench_bench::result::BatchProbe;
use std::process::{Command, Stdio};
use std::str::FromStr;

/// `-b`: a list of batch sizes, or `max`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchSpec {
    /// These batch sizes, in this order.
    List(Vec<usize>),
    /// The largest batch that fits on the device.
    Max,
}

impl FromStr for BatchSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<BatchSpec, String> {
        if s.trim().eq_ignore_ascii_case("max") {
            return Ok(BatchSpec::Max);
        }
        if s.split([',', '.']).any(|v| v.trim() == "0") {
            return Err("--batch-size must be at least 1".into());
        }
        let sizes = parse_list(s, "batch size", |v| {
            v.trim().parse::<usize>().ok().filter(|&n| n > 0)
        })?;
        Ok(BatchSpec::List(sizes))
    }
}

/// `--image-size`: one or more sizes, `N`, `HxW`, lists and ranges of squares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageSizes(pub Vec<ImageSize>);

impl FromStr for ImageSizes {
    type Err = String;
    fn from_str(s: &str) -> Result<ImageSizes, String> {
        let mut sizes = Vec::new();
        for item in s.split(',') {
            if item.contains("..") {
                let sides = parse_list(item, "image size", |v| {
                    v.trim().parse::<usize>().ok().filter(|&n| n > 0)
                })?;
                sizes.extend(sides.into_iter().map(|n| ImageSize {
                    height: n,
                    width: n,
                }));
            } else {
                sizes.push(item.parse::<ImageSize>()?);
            }
        }
        Ok(ImageSizes(sizes))
    }
}

/// `1,2,8` or `A..B` (A, 2A, 4A, … up to B) or a mix, in the order given.
fn parse_list(
    s: &str,
    what: &str,
    one: impl Fn(&str) -> Option<usize>,
) -> Result<Vec<usize>, String> {
    let bad = |item: &str| {
        format!(
            "\"{item}\" is not a {what}: use N, a list (1,2,4,8) or a range of powers of two (1..64)"
        )
    };
    let mut out = Vec::new();
    for item in s.split(',') {
        match item.split_once("..") {
            Some((a, b)) => {
                let (a, b) = (
                    one(a).ok_or_else(|| bad(item))?,
                    one(b).ok_or_else(|| bad(item))?,
                );
                if a > b {
                    return Err(format!(
                        "the range \"{item}\" is empty: write the smaller end first"
                    ));
                }
                let mut n = a;
                while n <= b {
                    out.push(n);
                    n *= 2;
                }
            }
            None => out.push(one(item).ok_or_else(|| bad(item))?),
        }
    }
    if out.is_empty() {
        return Err(format!("no {what} given"));
    }
    Ok(out)
}

/// `64MiB`, `2GB`, `1.5GiB`, `1000000` (bytes): the artificial memory limit (the spec's
/// parser, which a matrix file's `memory_limit` shares).
pub use cnnbench_results::spec::parse_bytes;

/// Runs `cnnbench` again as a probe, its job (JSON, see `run::job`) on standard input,
/// and classifies how it ended.
pub fn run_probe(job: &str, batch: usize, available: u64) -> Result<BatchProbe> {
    use std::io::Write;
    let exe =
        std::env::current_exe().context("cannot find the cnnbench executable to probe with")?;
    let mut child = Command::new(&exe)
        .args(["run", "--job", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {} for a memory probe", exe.display()))?;
    // A job is a few kilobytes: the pipe holds it whole, then closes.
    if let Some(mut pipe) = child.stdin.take() {
        pipe.write_all(job.as_bytes())
            .context("cannot give the memory probe its job")?;
    }
    let output = child
        .wait_with_output()
        .context("waiting for the memory probe")?;
    classify_probe(batch, &output, available)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_lists_and_ranges_parse() {
        assert_eq!("16".parse(), Ok(BatchSpec::List(vec![16])));
        assert_eq!("1,2,4,8".parse(), Ok(BatchSpec::List(vec![1, 2, 4, 8])));
        assert_eq!(
            "1..64".parse(),
            Ok(BatchSpec::List(vec![1, 2, 4, 8, 16, 32, 64]))
        );
        assert_eq!("3..20".parse(), Ok(BatchSpec::List(vec![3, 6, 12])));
        assert_eq!("1,24..48".parse(), Ok(BatchSpec::List(vec![1, 24, 48])));
        assert_eq!("MAX".parse(), Ok(BatchSpec::Max));
        assert_eq!(
            "0,1".parse::<BatchSpec>(),
            Err("--batch-size must be at least 1".into())
        );
        for bad in ["0", "", "a", "8..2", "1..", "1,,2", "0..4"] {
            assert!(bad.parse::<BatchSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn image_size_lists_parse() {
        let sq = |n| ImageSize {
            height: n,
            width: n,
        };
        assert_eq!(
            "128,224,320".parse(),
            Ok(ImageSizes(vec![sq(128), sq(224), sq(320)]))
        );
        assert_eq!(
            "299x300".parse(),
            Ok(ImageSizes(vec![ImageSize {
                height: 299,
                width: 300
            }]))
        );
        assert_eq!(
            "32..128".parse(),
            Ok(ImageSizes(vec![sq(32), sq(64), sq(128)]))
        );
        assert!("0,32".parse::<ImageSizes>().is_err());
    }

    #[test]
    fn memory_amounts_parse() {
        assert_eq!(parse_bytes("1000"), Ok(1000));
        assert_eq!(parse_bytes("64MiB"), Ok(64 << 20));
        assert_eq!(parse_bytes("1.5 GiB"), Ok(3 << 29));
        assert_eq!(parse_bytes("2GB"), Ok(2_000_000_000));
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("12 parsecs").is_err());
        assert!(parse_bytes("0").is_err());
        // Half a byte was 0 bytes, and 0 switched the memory check off.
        assert!(parse_bytes("0.5").is_err());
        assert!(parse_bytes("0.0001KB").is_err());
        assert_eq!(parse_bytes("0.5KiB"), Ok(512));
    }
}
