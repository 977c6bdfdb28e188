//! Statistics of timing samples: location, spread, a distribution-free confidence
//! interval for the median, outliers by Tukey's fences (counted, never removed), and the
//! bootstrap that puts confidence intervals on ratios of medians (`compare`).

use serde::{Deserialize, Serialize};

/// The seeded generator the bootstrap draws its resamples from.
pub use cnnbench_base::SplitMix64;

/// Summary of one timed quantity, in the samples' unit (seconds in result files).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub count: usize,
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 for a single sample.
    pub std: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// 95% confidence interval of the median from order statistics (exact binomial);
    /// with fewer than 6 samples no such interval reaches 95%, so it spans min..max.
    pub median_ci95: [f64; 2],
    /// Coefficient of variation, std / mean.
    pub cv: f64,
    /// Samples outside Tukey's fences (1.5 IQR beyond the quartiles).
    pub outliers: usize,
    /// The 50th, 90th, 95th and 99th percentiles (schema version 2; absent in version 1
    /// files). Tail latency is what a service sees; the median alone hides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentiles: Option<Percentiles>,
}

/// Percentiles of the samples, linearly interpolated between order statistics (NumPy's
/// default, Hyndman & Fan type 7): percentile `p` of `n` sorted samples sits at rank
/// `p·(n−1)`. A percentile only says more than the maximum when at least one sample
/// lies above it, i.e. with at least `1 / (1 − p)` samples ([`Percentiles::min_samples`]):
/// 10 for p90, 20 for p95, 100 for p99.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
}

impl Percentiles {
    /// The percentiles reported, as (name, fraction).
    pub const LEVELS: [(&'static str, f64); 4] =
        [("p50", 0.50), ("p90", 0.90), ("p95", 0.95), ("p99", 0.99)];

    /// Percentiles of sorted samples.
    pub fn of_sorted(sorted: &[f64]) -> Percentiles {
        Percentiles {
            p50: quantile(sorted, 0.50),
            p90: quantile(sorted, 0.90),
            p95: quantile(sorted, 0.95),
            p99: quantile(sorted, 0.99),
        }
    }

    /// The fewest samples for which percentile `fraction` is more than the maximum
    /// renamed: `ceil(1 / (1 − fraction))`, so that a sample lies beyond it.
    pub fn min_samples(fraction: f64) -> usize {
        if fraction >= 1.0 {
            return usize::MAX;
        }
        (1.0 / (1.0 - fraction) - 1e-9).ceil() as usize
    }

    /// The value at a level's name (`p50`, `p90`, `p95`, `p99`).
    pub fn get(&self, name: &str) -> Option<f64> {
        match name {
            "p50" => Some(self.p50),
            "p90" => Some(self.p90),
            "p95" => Some(self.p95),
            "p99" => Some(self.p99),
            _ => None,
        }
    }

    /// The reported levels that `count` samples cannot support (see
    /// [`Percentiles::min_samples`]), with the count each needs.
    pub fn unsupported(count: usize) -> Vec<(&'static str, usize)> {
        Percentiles::LEVELS
            .iter()
            .map(|&(name, f)| (name, Percentiles::min_samples(f)))
            .filter(|&(_, need)| count < need)
            .collect()
    }
}

/// The shortest time a pass (or a phase of one) can be measured at: below a nanosecond
/// is under any timer's resolution. A base time of 5e-324 s made every ratio infinite.
pub const SHORTEST_TIME_S: f64 = 1e-9;
/// The longest time a pass may take: a day. A sample of 1e308 s is finite in the file but
/// infinite in milliseconds, and the comparisons and charts broke on it.
pub const LONGEST_TIME_S: f64 = 86_400.0;

/// Why `seconds` is not a time a pass could have taken (`None` when it is): not finite,
/// negative, below [`SHORTEST_TIME_S`] or above [`LONGEST_TIME_S`]. A phase may be 0
/// (`zero_allowed`): a coarse clock can read no time for a short phase.
pub fn implausible_time(seconds: f64, zero_allowed: bool) -> Option<String> {
    if zero_allowed && seconds == 0.0 {
        return None;
    }
    if seconds.is_finite() && (SHORTEST_TIME_S..=LONGEST_TIME_S).contains(&seconds) {
        return None;
    }
    let shown = if seconds != 0.0 && !(1e-3..1e6).contains(&seconds.abs()) {
        format!("{seconds:e}")
    } else {
        format!("{seconds}")
    };
    Some(format!(
        "{shown} s, not a time a pass could take (1 ns to a day)"
    ))
}

impl Summary {
    /// Summarises samples; `None` when there are none or one is not finite.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() || samples.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let mean = sorted.iter().sum::<f64>() / n as f64;
        let std = if n > 1 {
            (sorted.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let (q1, q3) = (quantile(&sorted, 0.25), quantile(&sorted, 0.75));
        let iqr = q3 - q1;
        let (low, high) = (q1 - 1.5 * iqr, q3 + 1.5 * iqr);
        let outliers = sorted.iter().filter(|&&v| v < low || v > high).count();
        let (lo, hi) = median_ci_ranks(n);
        Some(Summary {
            count: n,
            mean,
            std,
            median: quantile(&sorted, 0.5),
            min: sorted[0],
            max: sorted[n - 1],
            median_ci95: [sorted[lo], sorted[hi]],
            cv: if mean > 0.0 { std / mean } else { 0.0 },
            outliers,
            percentiles: Some(Percentiles::of_sorted(&sorted)),
        })
    }
}

/// Linear-interpolated quantile of sorted data (NumPy's default method).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (i, frac) = (pos.floor() as usize, pos.fract());
    if i + 1 < sorted.len() {
        sorted[i] + frac * (sorted[i + 1] - sorted[i])
    } else {
        sorted[i]
    }
}

/// 0-based ranks `(lo, hi)` of the order statistics that bracket the median with at
/// least 95% confidence: the narrowest symmetric pair whose binomial(n, ½) coverage
/// `1 − 2·P(X ≤ lo)` is ≥ 0.95. Falls back to `(0, n-1)` when even that pair
/// covers less (n ≤ 5).
pub fn median_ci_ranks(n: usize) -> (usize, usize) {
    if n == 0 {
        return (0, 0);
    }
    // P(X < k) for X ~ Bin(n, 1/2), accumulated from the left tail.
    let mut pmf = 0.5f64.powi(n as i32);
    let mut cdf_below = 0.0; // P(X <= k-1)
    let mut best = (0, n - 1);
    for k in 0..n / 2 {
        // Interval [x_(k), x_(n-1-k)] (0-based) covers the median with probability
        // 1 - 2·P(X <= k).
        let cdf_k = cdf_below + pmf; // P(X <= k)
        if 1.0 - 2.0 * cdf_k >= 0.95 {
            best = (k, n - 1 - k);
        } else {
            break;
        }
        cdf_below = cdf_k;
        pmf *= (n - k) as f64 / (k + 1) as f64;
    }
    best
}

/// The median of unsorted data, sorting it in place; NaN when empty.
pub fn median_in_place(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    quantile(v, 0.5)
}

/// Bootstrap distribution of median(new) / median(base): `resamples` times, each side
/// is resampled with replacement (indices from `rng`) and the ratio of the medians kept;
/// a draw whose base median is not positive is left out. Both sides must hold samples.
pub fn bootstrap_median_ratios(
    base: &[f64],
    new: &[f64],
    resamples: usize,
    rng: &mut SplitMix64,
) -> Vec<f64> {
    let (a, b) = (ResampledMedian::new(base), ResampledMedian::new(new));
    let mut out = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let (ma, mb) = (a.draw(rng), b.draw(rng));
        if ma > 0.0 {
            out.push(mb / ma);
        }
    }
    out
}

/// The statistic of a side made of several runs (processes): the median of the runs'
/// medians. Every run counts once, however many passes it timed, so one long run cannot
/// outvote the others; NaN without runs.
pub fn median_of_run_medians(runs: &[Vec<f64>]) -> f64 {
    let mut medians: Vec<f64> = runs
        .iter()
        .filter(|r| !r.is_empty())
        .map(|r| median_in_place(&mut r.clone()))
        .collect();
    median_in_place(&mut medians)
}

/// Bootstrap distribution of [`median_of_run_medians`]`(new) / …(base)` that treats the
/// run, not the pass, as the unit: each draw resamples each side's runs with replacement,
/// then the passes within every drawn run, and takes the median of the drawn runs'
/// medians. Its spread includes the run-to-run variation that the passes of one process
/// do not show (a shared VM's speed moves ±15% from one process to the next while the
/// passes of each agree). A draw whose base is not positive is left out; both sides must
/// hold runs with samples.
pub fn bootstrap_run_median_ratios(
    base: &[Vec<f64>],
    new: &[Vec<f64>],
    resamples: usize,
    rng: &mut SplitMix64,
) -> Vec<f64> {
    let side = |runs: &[Vec<f64>]| -> Vec<ResampledMedian> {
        runs.iter()
            .filter(|r| !r.is_empty())
            .map(|r| ResampledMedian::new(r))
            .collect()
    };
    let (a, b) = (side(base), side(new));
    if a.is_empty() || b.is_empty() {
        return Vec::new();
    }
    let mut scratch = Vec::new();
    let mut draw = |runs: &[ResampledMedian], rng: &mut SplitMix64| -> f64 {
        scratch.clear();
        for _ in 0..runs.len() {
            let pick = (rng.next_u64() % runs.len() as u64) as usize;
            scratch.push(runs[pick].draw(rng));
        }
        median_in_place(&mut scratch)
    };
    let mut out = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let ma = draw(&a, rng);
        let mb = draw(&b, rng);
        if ma > 0.0 {
            out.push(mb / ma);
        }
    }
    out
}

/// Bootstrap distribution of the median of `samples`: `resamples` times, the samples are
/// resampled with replacement (indices from `rng`) and the median kept. Empty when
/// there are no samples.
pub fn bootstrap_medians(samples: &[f64], resamples: usize, rng: &mut SplitMix64) -> Vec<f64> {
    if samples.is_empty() {
        return Vec::new();
    }
    let median = ResampledMedian::new(samples);
    (0..resamples).map(|_| median.draw(rng)).collect()
}

/// The median of one resample with replacement, drawn without making the resample.
///
/// Resampling n values with replacement puts a multinomial count on each position of the
/// sorted values; the median is read at the one or two middle positions of that count.
/// Those positions are found by halving: the draws that land in the left half of a range
/// are binomial(draws in the range, left share), so about 2·log₂(n) binomial draws find
/// both middle positions, with exactly the distribution of copying, sorting and reading
/// the resample. Copying and sorting cost O(n log n) a draw: `compare` of 200,000 samples
/// (what `--min-time` on a tiny model records) ran past a minute (issue #31), and the
/// adaptive stop rule paid it after every pass.
struct ResampledMedian {
    sorted: Vec<f64>,
}

impl ResampledMedian {
    fn new(samples: &[f64]) -> Self {
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        Self { sorted }
    }

    fn draw(&self, rng: &mut SplitMix64) -> f64 {
        let n = self.sorted.len();
        if n == 0 {
            return f64::NAN;
        }
        // The positions `quantile(…, 0.5)` reads of a sorted resample, and its weight.
        let pos = 0.5 * (n - 1) as f64;
        let (lo, frac) = (pos.floor() as usize, pos.fract());
        let hi = (lo + 1).min(n - 1);
        let mut at = [0usize; 2];
        let mut bits = BinomialSource(rng);
        locate(
            0,
            n,
            n as u64,
            &[(lo as u64, 0), (hi as u64, 1)],
            &mut bits,
            &mut at,
        );
        let (a, b) = (self.sorted[at[0]], self.sorted[at[1]]);
        if lo + 1 < n {
            a + frac * (b - a)
        } else {
            a
        }
    }
}

/// Finds the positions (in `start..end`) of the draws ranked `targets` (0-based, among
/// the `draws` that landed in that range), writing each into `found[slot]`.
fn locate(
    start: usize,
    end: usize,
    draws: u64,
    targets: &[(u64, usize)],
    bits: &mut BinomialSource<'_>,
    found: &mut [usize; 2],
) {
    if targets.is_empty() {
        return;
    }
    if end - start == 1 {
        for &(_, slot) in targets {
            found[slot] = start;
        }
        return;
    }
    let middle = start + (end - start) / 2;
    let share = (middle - start) as f64 / (end - start) as f64;
    let left = bits.binomial(draws, share);
    let (in_left, in_right): (Vec<_>, Vec<_>) = targets.iter().partition(|(rank, _)| *rank < left);
    let in_right: Vec<_> = in_right
        .into_iter()
        .map(|(rank, slot)| (rank - left, slot))
        .collect();
    locate(start, middle, left, &in_left, bits, found);
    locate(middle, end, draws - left, &in_right, bits, found);
}

/// The bootstrap's generator as a source for `rand_distr`'s binomial sampler.
struct BinomialSource<'a>(&'a mut SplitMix64);

impl BinomialSource<'_> {
    fn binomial(&mut self, trials: u64, p: f64) -> u64 {
        use rand_distr::Distribution;
        match rand_distr::Binomial::new(trials, p) {
            Ok(d) => d.sample(self),
            // Only for p outside [0, 1], which the halving never asks for.
            Err(_) => trials / 2,
        }
    }
}

impl rand_core::RngCore for BinomialSource<'_> {
    fn next_u32(&mut self) -> u32 {
        (self.0.next_u64() >> 32) as u32
    }

    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        for chunk in dst.chunks_mut(8) {
            let bytes = self.0.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

/// The bootstrap 95% interval of the median, relative to the median: the larger of its
/// two half-widths divided by the median (0.02 means "within ±2%"). `None` without
/// samples or with a median that is not positive.
pub fn median_ci95_relative(samples: &[f64], resamples: usize, seed: u64) -> Option<f64> {
    let mut sorted = samples.to_vec();
    let median = median_in_place(&mut sorted);
    if sorted.is_empty() || median.is_nan() || median <= 0.0 {
        return None;
    }
    let [lo, hi] = percentile_interval95(bootstrap_medians(
        samples,
        resamples,
        &mut SplitMix64::new(seed),
    ));
    Some((median - lo).max(hi - median) / median)
}

/// The percentile 95% interval of a bootstrap distribution: its 2.5% and 97.5% quantiles.
pub fn percentile_interval95(mut draws: Vec<f64>) -> [f64; 2] {
    draws.sort_by(f64::total_cmp);
    [quantile(&draws, 0.025), quantile(&draws, 0.975)]
}

/// The bootstrap 95% interval of a geometric mean of ratios, from each ratio's bootstrap
/// draws as logarithms: draw `k` of the mean combines draw `k` of every ratio. `None`
/// without draws.
pub fn geomean_interval95(log_draws: &[Vec<f64>]) -> Option<[f64; 2]> {
    if log_draws.is_empty() {
        return None;
    }
    let n = log_draws.iter().map(Vec::len).min().unwrap_or(0);
    let means: Vec<f64> = (0..n)
        .map(|k| (log_draws.iter().map(|d| d[k]).sum::<f64>() / log_draws.len() as f64).exp())
        .collect();
    Some(percentile_interval95(means))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_data() {
        let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.count, 8);
        assert!((s.mean - 5.0).abs() < 1e-12);
        // sample std of this classic set: sqrt(32/7)
        assert!((s.std - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert!((s.median - 4.5).abs() < 1e-12);
        assert_eq!((s.min, s.max), (2.0, 9.0));
        // quartiles 4 and 5.5: the upper fence is 7.75, so 9 is an outlier
        assert_eq!(s.outliers, 1);
    }

    #[test]
    fn outliers_are_counted_not_removed() {
        let s = Summary::of(&[1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 5.0]).unwrap();
        assert_eq!(s.outliers, 1);
        assert_eq!(s.count, 7);
        assert_eq!(s.max, 5.0);
    }

    #[test]
    fn quantiles_interpolate_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.5), 2.5);
        assert_eq!(quantile(&v, 0.25), 1.75);
        assert_eq!(quantile(&v, 1.0), 4.0);
    }

    #[test]
    fn median_ci_ranks_match_binomial_tables() {
        // Small samples cannot reach 95%: the whole range.
        assert_eq!(median_ci_ranks(5), (0, 4));
        // n = 6: [x(1), x(6)] (1-based) has coverage 1 - 2/64 = 0.969.
        assert_eq!(median_ci_ranks(6), (0, 5));
        // n = 10: [x(2), x(9)] (1-based) covers 0.979; [x(3), x(8)] only 0.891.
        assert_eq!(median_ci_ranks(10), (1, 8));
        // n = 20: [x(6), x(15)] (1-based) covers 0.959.
        assert_eq!(median_ci_ranks(20), (5, 14));
    }

    #[test]
    fn empty_or_nan_gives_none() {
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[1.0, f64::NAN]).is_none());
        let one = Summary::of(&[3.0]).unwrap();
        assert_eq!(one.std, 0.0);
        assert_eq!(one.median_ci95, [3.0, 3.0]);
    }

    #[test]
    fn bootstrap_interval_brackets_the_true_ratio() {
        let base: Vec<f64> = (0..30)
            .map(|i| 1.0 + 0.01 * ((i * 7 % 11) as f64 - 5.0))
            .collect();
        let new: Vec<f64> = base.iter().map(|x| x * 1.2).collect();
        let mut rng = SplitMix64::new(7);
        let ci = percentile_interval95(bootstrap_median_ratios(&base, &new, 2000, &mut rng));
        assert!(ci[0] <= 1.2 && 1.2 <= ci[1], "{ci:?}");
        assert!(ci[1] - ci[0] < 0.1, "{ci:?}");
    }

    #[test]
    fn the_bootstrap_is_seeded() {
        let base = [1.0, 1.1, 0.9, 1.05, 0.95];
        let new = [2.0, 2.2, 1.8, 2.1, 1.9];
        let draw = |seed| bootstrap_median_ratios(&base, &new, 200, &mut SplitMix64::new(seed));
        assert_eq!(draw(3), draw(3));
        assert_ne!(draw(3), draw(4));
        // Ratios of medians of resamples lie between the extreme ratios.
        assert!(draw(3).iter().all(|r| (1.8 / 1.1..=2.2 / 0.9).contains(r)));
    }

    #[test]
    fn percentile_interval_and_geomean_interval() {
        let draws: Vec<f64> = (0..=1000).map(|i| i as f64 / 1000.0).collect();
        let ci = percentile_interval95(draws.clone());
        assert!(
            (ci[0] - 0.025).abs() < 1e-12 && (ci[1] - 0.975).abs() < 1e-12,
            "{ci:?}"
        );
        // One ratio: the geometric mean's interval is that ratio's.
        let logs: Vec<f64> = draws.iter().map(|r| (1.0 + r).ln()).collect();
        let g = geomean_interval95(std::slice::from_ref(&logs)).unwrap();
        assert!(
            (g[0] - 1.025).abs() < 1e-9 && (g[1] - 1.975).abs() < 1e-9,
            "{g:?}"
        );
        // Two identical ratios: the same interval.
        let g2 = geomean_interval95(&[logs.clone(), logs]).unwrap();
        assert!((g2[0] - g[0]).abs() < 1e-12 && (g2[1] - g[1]).abs() < 1e-12);
        assert_eq!(geomean_interval95(&[]), None);
    }

    #[test]
    fn percentiles_interpolate_and_know_their_sample_needs() {
        let v: Vec<f64> = (1..=101).map(f64::from).collect();
        let p = Summary::of(&v).unwrap().percentiles.unwrap();
        assert_eq!((p.p50, p.p90, p.p95, p.p99), (51.0, 91.0, 96.0, 100.0));
        // Between order statistics: rank 0.9·(4−1) = 2.7 of [1, 2, 3, 4].
        let q = Percentiles::of_sorted(&[1.0, 2.0, 3.0, 4.0]);
        assert!((q.p90 - 3.7).abs() < 1e-12, "{q:?}");
        assert_eq!(q.get("p90"), Some(q.p90));
        assert_eq!(q.get("p42"), None);
        assert_eq!(Percentiles::min_samples(0.5), 2);
        assert_eq!(Percentiles::min_samples(0.9), 10);
        assert_eq!(Percentiles::min_samples(0.95), 20);
        assert_eq!(Percentiles::min_samples(0.99), 100);
        assert_eq!(
            Percentiles::unsupported(10),
            vec![("p95", 20), ("p99", 100)]
        );
        assert_eq!(
            Percentiles::unsupported(1),
            vec![("p50", 2), ("p90", 10), ("p95", 20), ("p99", 100)]
        );
        assert!(Percentiles::unsupported(100).is_empty());
    }

    #[test]
    fn the_median_interval_narrows_with_steady_samples() {
        let steady: Vec<f64> = (0..40).map(|i| 1.0 + 0.001 * (i % 5) as f64).collect();
        let noisy: Vec<f64> = (0..40)
            .map(|i| 1.0 + 0.5 * ((i * 7 % 11) as f64 / 10.0))
            .collect();
        let s = median_ci95_relative(&steady, 500, 1).unwrap();
        let n = median_ci95_relative(&noisy, 500, 1).unwrap();
        assert!(s < 0.01, "{s}");
        assert!(n > 0.05, "{n}");
        assert_eq!(median_ci95_relative(&[], 500, 1), None);
        assert_eq!(median_ci95_relative(&steady, 500, 1), Some(s), "seeded");
    }

    #[test]
    fn the_drawn_median_has_the_distribution_of_sorting_a_resample() {
        // Odd and even sizes and ties: how often each median comes up, drawn both ways.
        for samples in [
            vec![3.0],
            vec![2.0, 1.0],
            vec![5.0, 1.0, 1.0, 4.0, 2.5],
            vec![4.0, 1.0, 3.0, 2.0, 6.0, 5.0],
        ] {
            let draws = 40_000;
            let (mut a, mut b) = (SplitMix64::new(9), SplitMix64::new(10));
            let drawn = ResampledMedian::new(&samples);
            let mut copy = vec![0.0; samples.len()];
            let mut freq = std::collections::BTreeMap::<u64, [f64; 2]>::new();
            for _ in 0..draws {
                freq.entry(drawn.draw(&mut a).to_bits()).or_default()[0] += 1.0 / draws as f64;
                for x in copy.iter_mut() {
                    *x = samples[b.below(samples.len())];
                }
                freq.entry(median_in_place(&mut copy).to_bits())
                    .or_default()[1] += 1.0 / draws as f64;
            }
            for (value, [ours, sorting]) in freq {
                assert!(
                    (ours - sorting).abs() < 0.01,
                    "{samples:?}: median {} {ours} vs {sorting}",
                    f64::from_bits(value)
                );
            }
        }
    }

    #[test]
    fn the_median_of_many_samples_is_drawn_quickly() {
        let samples: Vec<f64> = (0..200_000)
            .map(|i| 1.0 + (i % 977) as f64 * 1e-3)
            .collect();
        let started = std::time::Instant::now();
        let draws = bootstrap_medians(&samples, 10_000, &mut SplitMix64::new(1));
        assert_eq!(draws.len(), 10_000);
        // Copying and sorting: `compare` of 200,000 samples ran past a minute.
        assert!(
            started.elapsed().as_secs_f64() < 5.0,
            "{:?}",
            started.elapsed()
        );
        let [lo, hi] = percentile_interval95(draws);
        let mut sorted = samples.clone();
        let median = median_in_place(&mut sorted);
        assert!(
            lo <= median && median <= hi && hi - lo < 0.02,
            "{lo} {median} {hi}"
        );
    }

    #[test]
    fn median_in_place_sorts() {
        let mut v = [3.0, 1.0, 2.0, 10.0];
        assert_eq!(median_in_place(&mut v), 2.5);
        assert_eq!(v, [1.0, 2.0, 3.0, 10.0]);
        assert!(median_in_place(&mut []).is_nan());
    }
}

#[cfg(test)]
mod run_tests {
    use super::*;

    /// `runs` processes of `passes` passes each: process `i`'s speed is `factor(i)`
    /// times `base_s`, its passes within ±0.5% of that (as on a shared VM, where the
    /// passes of one process agree and processes do not).
    fn runs(
        base_s: f64,
        runs: usize,
        passes: usize,
        factor: impl Fn(usize) -> f64,
        rng: &mut SplitMix64,
    ) -> Vec<Vec<f64>> {
        (0..runs)
            .map(|i| {
                (0..passes)
                    .map(|_| base_s * factor(i) * (1.0 + 0.01 * (rng.next_f64() - 0.5)))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn run_to_run_variation_widens_the_interval_that_passes_alone_make_narrow() {
        let mut rng = SplitMix64::new(7);
        // The same configuration in two sets of processes; each process lands ±15% off.
        let shift = |i: usize| [1.00, 1.14, 0.88, 1.10, 0.93][i % 5];
        let base = runs(1.0, 5, 20, shift, &mut rng);
        let new = runs(1.0, 5, 20, |i| shift(i + 2), &mut rng);
        // Passes pooled (the old unit): one pair of processes, here the first of each.
        let pooled = percentile_interval95(bootstrap_median_ratios(
            &base[0],
            &new[0],
            2000,
            &mut SplitMix64::new(1),
        ));
        assert!(pooled[0] > 1.02 || pooled[1] < 0.98, "{pooled:?}");
        let by_run = percentile_interval95(bootstrap_run_median_ratios(
            &base,
            &new,
            2000,
            &mut SplitMix64::new(1),
        ));
        assert!(by_run[0] < 1.0 && by_run[1] > 1.0, "{by_run:?}");
    }

    #[test]
    fn a_real_change_is_found_with_five_runs_a_side() {
        let mut rng = SplitMix64::new(11);
        let shift = |i: usize| [1.00, 1.02, 0.985, 1.01, 0.99][i % 5];
        let base = runs(1.0, 5, 10, shift, &mut rng);
        let new = runs(0.9, 5, 10, |i| shift(i + 1), &mut rng);
        let ci = percentile_interval95(bootstrap_run_median_ratios(
            &base,
            &new,
            2000,
            &mut SplitMix64::new(1),
        ));
        assert!(ci[1] < 0.98 && ci[0] > 0.85, "{ci:?}");
        let point = median_of_run_medians(&new) / median_of_run_medians(&base);
        assert!((point - 0.9).abs() < 0.02, "{point}");
    }

    #[test]
    fn the_median_of_run_medians_counts_each_run_once() {
        // A long run of slow passes does not outvote two short fast ones.
        let runs = vec![vec![1.0; 3], vec![1.0; 3], vec![2.0; 100]];
        assert_eq!(median_of_run_medians(&runs), 1.0);
        assert!(median_of_run_medians(&[]).is_nan());
        assert!(bootstrap_run_median_ratios(&[], &runs, 10, &mut SplitMix64::new(1)).is_empty());
    }
}
