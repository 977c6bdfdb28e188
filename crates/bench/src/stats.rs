//! Statistics of timing samples: location, spread, a distribution-free confidence
//! interval for the median, and outliers by Tukey's fences (counted, never removed).

use serde::{Deserialize, Serialize};

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
}
