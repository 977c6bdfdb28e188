//! When to stop timing: after a number of passes, after some seconds of timed work, or
//! as soon as the median is pinned down (its bootstrap 95% interval within a target),
//! whichever the request asks for, never past a time limit. Kept apart from the clock so
//! the rule can be tested on made-up samples.

use crate::result::StopReason;
use crate::stats::median_ci95_relative;
use std::time::Duration;

/// No interval is trusted from fewer passes than this: with a handful of samples the
/// bootstrap interval of the median is too coarse (it jumps between a few order
/// statistics) to say the median is pinned down.
pub const MIN_PASSES_FOR_CI: usize = 10;

/// Bootstrap resamples for each interval the rule computes.
const RESAMPLES: usize = 1000;

/// The stopping settings of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StopRule {
    /// At least this many timed passes (unless `max_time` comes first).
    pub passes: usize,
    /// Keep passing until this much timed work.
    pub min_time: Option<Duration>,
    /// Start no timed pass after this much timed work.
    pub max_time: Option<Duration>,
    /// Stop once the 95% interval of the median total is within ± this fraction of it
    /// (0.02 for ±2%).
    pub target_ci: Option<f64>,
}

/// Where a run stands against its [`StopRule`]; fed one pass at a time.
#[derive(Debug)]
pub struct Stopper {
    rule: StopRule,
    /// Whether `min_time` was still unmet when the pass count was reached.
    passes_reached_before_min_time: bool,
    /// The pass count at which the interval is computed next (it is not recomputed
    /// after every pass of a long run: each costs `RESAMPLES` sorts).
    next_ci_check: usize,
    /// The last interval computed, relative to the median.
    last_ci: Option<f64>,
}

impl Stopper {
    pub fn new(rule: StopRule) -> Stopper {
        Stopper {
            rule,
            passes_reached_before_min_time: false,
            next_ci_check: rule.passes.max(MIN_PASSES_FOR_CI),
            last_ci: None,
        }
    }

    /// The last interval computed (see [`Stopper::final_ci`] for the end of a run).
    pub fn last_ci(&self) -> Option<f64> {
        self.last_ci
    }

    /// After a timed pass: the totals so far and the seconds of timed work. `Some` when
    /// the run should stop, with the reason.
    pub fn after_pass(&mut self, totals: &[f64], timed_s: f64) -> Option<StopReason> {
        let n = totals.len();
        let rule = self.rule;
        let min_time_met = rule.min_time.is_none_or(|t| timed_s >= t.as_secs_f64());
        if n == rule.passes && !min_time_met {
            self.passes_reached_before_min_time = true;
        }
        if let Some(target) = rule.target_ci {
            if n >= self.next_ci_check && min_time_met {
                self.next_ci_check = n + (n / 10).max(1);
                self.last_ci = median_ci95_relative(totals, RESAMPLES, n as u64);
                if self.last_ci.is_some_and(|ci| ci <= target) {
                    return Some(StopReason::TargetCi);
                }
            }
        } else if n >= rule.passes && min_time_met {
            return Some(if self.passes_reached_before_min_time {
                StopReason::MinTime
            } else {
                StopReason::Passes
            });
        }
        if rule.max_time.is_some_and(|t| timed_s >= t.as_secs_f64()) {
            return Some(StopReason::MaxTime);
        }
        None
    }

    /// The interval at the end of the run: the one that stopped it, or one computed on
    /// all the totals (`None` with fewer than 2 passes).
    pub fn final_ci(&self, totals: &[f64], reason: StopReason) -> Option<f64> {
        if reason == StopReason::TargetCi {
            return self.last_ci;
        }
        if totals.len() < 2 {
            return None;
        }
        median_ci95_relative(totals, RESAMPLES, totals.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds passes of the given durations until the rule stops; returns the reason
    /// and the number of passes.
    fn drive(rule: StopRule, pass: impl Fn(usize) -> f64) -> (StopReason, usize) {
        let mut stopper = Stopper::new(rule);
        let mut totals = Vec::new();
        for i in 0..100_000 {
            totals.push(pass(i));
            let timed: f64 = totals.iter().sum();
            if let Some(reason) = stopper.after_pass(&totals, timed) {
                return (reason, totals.len());
            }
        }
        panic!("never stopped");
    }

    #[test]
    fn a_pass_count_alone_stops_at_the_count() {
        let rule = StopRule {
            passes: 7,
            ..StopRule::default()
        };
        assert_eq!(drive(rule, |_| 0.01), (StopReason::Passes, 7));
    }

    #[test]
    fn min_time_keeps_passing_past_the_count() {
        let rule = StopRule {
            passes: 3,
            min_time: Some(Duration::from_millis(125)),
            ..StopRule::default()
        };
        // Sixteenths and eighths of a second add up exactly.
        assert_eq!(drive(rule, |_| 0.0625 / 4.0), (StopReason::MinTime, 8));
        // Already met when the count is reached: the count stopped it.
        assert_eq!(drive(rule, |_| 0.0625), (StopReason::Passes, 3));
    }

    #[test]
    fn max_time_caps_everything() {
        let rule = StopRule {
            passes: 1000,
            max_time: Some(Duration::from_millis(125)),
            ..StopRule::default()
        };
        assert_eq!(drive(rule, |_| 0.0625 / 4.0), (StopReason::MaxTime, 8));
    }

    #[test]
    fn a_target_interval_stops_steady_runs_early_and_noisy_ones_at_the_limit() {
        let rule = StopRule {
            passes: 3,
            max_time: Some(Duration::from_secs(10)),
            target_ci: Some(0.02),
            ..StopRule::default()
        };
        let steady = |i: usize| 0.01 * (1.0 + 0.001 * (i % 3) as f64);
        let (reason, n) = drive(rule, steady);
        assert_eq!(reason, StopReason::TargetCi);
        assert_eq!(n, MIN_PASSES_FOR_CI);
        // Alternating 5 ms and 15 ms: the median jumps between the two halves.
        let noisy = |i: usize| if i.is_multiple_of(2) { 0.005 } else { 0.015 };
        let (reason, n) = drive(rule, noisy);
        assert_eq!(reason, StopReason::MaxTime);
        assert!((999..=1001).contains(&n), "{n}");
    }

    #[test]
    fn the_final_interval_is_reported_for_every_reason() {
        let rule = StopRule {
            passes: 20,
            ..StopRule::default()
        };
        let stopper = Stopper::new(rule);
        let totals: Vec<f64> = (0..20).map(|i| 1.0 + 0.01 * (i % 4) as f64).collect();
        let ci = stopper.final_ci(&totals, StopReason::Passes).unwrap();
        assert!(ci > 0.0 && ci < 0.02, "{ci}");
        assert_eq!(stopper.final_ci(&[1.0], StopReason::Passes), None);
    }
}
