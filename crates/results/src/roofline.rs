//! The roofline of a profile: how far each layer, and the network, runs from this
//! machine's measured limits, and which limit bounds it. The ceilings are what
//! `cnnbench peak` measured through the engine (its best compute rate in the precision,
//! and the bandwidth of each cache level and of DRAM); a layer's roof at its arithmetic
//! intensity I (FLOPs per byte moved) is `min(compute, bandwidth × I)`, with the
//! bandwidth of the smallest memory level that holds the bytes it moves (Williams,
//! Waterman and Patterson's roofline, with Ilic et al.'s cache-aware ceilings).

use serde::{Deserialize, Serialize};

/// What a layer's time is bound by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bound {
    /// The compute roof is the lower at the layer's intensity, and the layer runs
    /// within [`OVERHEAD_FACTOR`] of it.
    Compute,
    /// The memory roof is the lower, and the layer runs within [`OVERHEAD_FACTOR`] of it.
    Memory,
    /// Neither roof explains the time: the layer takes more than [`OVERHEAD_FACTOR`]
    /// times what its roof allows (call and dispatch costs, a layout conversion, a
    /// kernel far from its best).
    Overhead,
}

impl Bound {
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Compute => "compute",
            Bound::Memory => "memory",
            Bound::Overhead => "overhead",
        }
    }
}

/// A layer that runs at less than 1/`OVERHEAD_FACTOR` of its roof is said bound by
/// overhead: a layer at 25% of a roof is still that roof's (a kernel off its best), one
/// at 10% is not explained by it.
pub const OVERHEAD_FACTOR: f64 = 4.0;

/// One memory level's measured bandwidth.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryCeiling {
    /// `L2`, `L3`, `DRAM`.
    pub level: String,
    /// The bytes the level holds (all its instances the engine's threads use); `None`
    /// for DRAM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holds_bytes: Option<u64>,
    /// Bytes read plus written per second, in GB/s.
    pub gb_per_s: f64,
}

/// The machine's limits as measured through the engine, in the profile's precision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ceilings {
    /// The engine's best compute rate measured (`cnnbench peak`).
    pub compute_gflops_per_s: f64,
    /// What it was measured with (`matrix product`, `3×3 convolution`).
    pub compute_primitive: String,
    /// The memory levels from the smallest to DRAM (the last, holding everything).
    pub memory: Vec<MemoryCeiling>,
    /// The ISA's nominal rate for the precision where it is known (f32: cores × clock
    /// × lanes × FMA), for `% of nominal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nominal_gflops_per_s: Option<f64>,
}

impl Ceilings {
    /// The memory level a layer moving `bytes` streams from: the smallest that holds
    /// them, else the last (DRAM).
    pub fn level_for(&self, bytes: f64) -> Option<&MemoryCeiling> {
        self.memory
            .iter()
            .find(|m| m.holds_bytes.is_some_and(|holds| bytes <= holds as f64))
            .or_else(|| self.memory.last())
    }

    /// The roof at intensity `flops_per_byte` from `level`: GFLOP/s.
    pub fn roof(&self, flops_per_byte: f64, level: &MemoryCeiling) -> f64 {
        self.compute_gflops_per_s
            .min(level.gb_per_s * flops_per_byte)
    }

    /// The intensity at which `level`'s roof meets the compute roof (the ridge point),
    /// FLOPs per byte.
    pub fn ridge(&self, level: &MemoryCeiling) -> f64 {
        if level.gb_per_s > 0.0 {
            self.compute_gflops_per_s / level.gb_per_s
        } else {
            f64::INFINITY
        }
    }

    /// Whether the ceilings can judge anything: a positive compute rate and at least
    /// one positive bandwidth.
    pub fn usable(&self) -> bool {
        self.compute_gflops_per_s > 0.0
            && !self.memory.is_empty()
            && self.memory.iter().all(|m| m.gb_per_s > 0.0)
    }
}

/// One layer against the ceilings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayerRoof {
    /// Bytes the layer moves at the precision: its weights, inputs and outputs.
    pub bytes: f64,
    /// FLOPs per byte moved.
    pub intensity: f64,
    /// FLOPs over the layer's median time.
    pub achieved_gflops_per_s: f64,
    /// The memory level its bytes stream from (the smallest that holds them).
    pub memory_level: String,
    /// The roof at its intensity from that level.
    pub roof_gflops_per_s: f64,
    /// The least time the roofs allow: the longer of its FLOPs at the compute ceiling
    /// and its bytes at the level's bandwidth, seconds.
    pub roof_time_s: f64,
    /// Achieved over the roof.
    pub of_roof: f64,
    /// Achieved over the nominal rate, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub of_nominal: Option<f64>,
    pub bound: Bound,
}

/// The least time `flops` and `bytes` take under the ceilings from `level`.
fn roof_time(ceilings: &Ceilings, flops: f64, bytes: f64, level: &MemoryCeiling) -> f64 {
    (flops / (ceilings.compute_gflops_per_s * 1e9)).max(bytes / (level.gb_per_s * 1e9))
}

/// A layer of `flops` moving `bytes` in `seconds` against `ceilings`. `None` when it
/// computes no FLOPs, took no time or the ceilings cannot judge (a layer that only moves
/// memory is judged by the network's sum, see [`network`]).
pub fn layer(ceilings: &Ceilings, flops: f64, bytes: f64, seconds: f64) -> Option<LayerRoof> {
    if !(ceilings.usable() && flops > 0.0 && bytes > 0.0 && seconds > 0.0) {
        return None;
    }
    let level = ceilings.level_for(bytes)?;
    let intensity = flops / bytes;
    let roof = ceilings.roof(intensity, level);
    let achieved = flops / seconds / 1e9;
    let of_roof = achieved / roof;
    let bound = if of_roof * OVERHEAD_FACTOR < 1.0 {
        Bound::Overhead
    } else if intensity >= ceilings.ridge(level) {
        Bound::Compute
    } else {
        Bound::Memory
    };
    Some(LayerRoof {
        bytes,
        intensity,
        achieved_gflops_per_s: achieved,
        memory_level: level.level.clone(),
        roof_gflops_per_s: roof,
        roof_time_s: roof_time(ceilings, flops, bytes, level),
        of_roof,
        of_nominal: ceilings
            .nominal_gflops_per_s
            .filter(|n| *n > 0.0)
            .map(|n| achieved / n),
        bound,
    })
}

/// A run's forward pass against the ceilings `cnnbench peak` cached for its engine and
/// precision: what `choose` and the run's table show as "% of roof".
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRoofline {
    /// The least time the roofs allow one forward pass of the batch, seconds: every
    /// node's longer of its FLOPs at the compute roof and its bytes at the bandwidth of
    /// the smallest memory level holding them.
    pub forward_roof_s: f64,
    /// `forward_roof_s` over the run's median forward time.
    pub forward_of_roof: f64,
}

impl RunRoofline {
    /// The roofline of a forward pass whose least time is `roof_s`, measured at
    /// `forward_s`; `None` when either is not a positive time.
    pub fn of(roof_s: f64, forward_s: f64) -> Option<RunRoofline> {
        (roof_s > 0.0 && forward_s > 0.0 && roof_s.is_finite() && forward_s.is_finite()).then(
            || RunRoofline {
                forward_roof_s: roof_s,
                forward_of_roof: roof_s / forward_s,
            },
        )
    }
}

/// The least time `layers` (FLOPs and bytes; their seconds unread) take under
/// `ceilings`, or `None` when the ceilings cannot judge.
pub fn least_time(ceilings: &Ceilings, layers: &[LayerWork]) -> Option<f64> {
    if !ceilings.usable() {
        return None;
    }
    Some(
        layers
            .iter()
            .filter_map(|w| {
                let level = ceilings.level_for(w.bytes)?;
                Some(roof_time(ceilings, w.flops, w.bytes, level))
            })
            .sum(),
    )
}

/// One layer's work and time, as [`network`] sums them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerWork {
    pub flops: f64,
    pub bytes: f64,
    pub seconds: f64,
}

/// The network against the ceilings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetworkRoof {
    pub flops: f64,
    /// Every layer's bytes, summed (what the layers move one after another).
    pub bytes: f64,
    /// The time measured end to end, seconds.
    pub measured_s: f64,
    /// The least time the roofs allow: every layer's roof time (element-wise layers
    /// included, at their memory level), summed.
    pub roof_time_s: f64,
    /// `roof_time_s / measured_s`: the fraction of the measured roof the network runs at.
    pub of_roof: f64,
    /// FLOPs over the measured time.
    pub achieved_gflops_per_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub of_nominal: Option<f64>,
    /// The layers' times (their medians) by bound, seconds: where the time goes.
    pub compute_bound_s: f64,
    pub memory_bound_s: f64,
    pub overhead_bound_s: f64,
}

/// The network of `layers` measured end to end in `measured_s` against `ceilings`;
/// `None` when the ceilings cannot judge or nothing was measured.
pub fn network(ceilings: &Ceilings, layers: &[LayerWork], measured_s: f64) -> Option<NetworkRoof> {
    if !(ceilings.usable() && measured_s > 0.0) {
        return None;
    }
    let mut roof = NetworkRoof {
        flops: 0.0,
        bytes: 0.0,
        measured_s,
        roof_time_s: 0.0,
        of_roof: 0.0,
        achieved_gflops_per_s: 0.0,
        of_nominal: None,
        compute_bound_s: 0.0,
        memory_bound_s: 0.0,
        overhead_bound_s: 0.0,
    };
    roof.roof_time_s = least_time(ceilings, layers)?;
    for work in layers {
        roof.flops += work.flops;
        roof.bytes += work.bytes;
        // A layer without FLOPs is bound by memory while it runs near its bandwidth.
        let bound = match layer(ceilings, work.flops, work.bytes, work.seconds) {
            Some(judged) => judged.bound,
            None if work.bytes > 0.0 && work.seconds > 0.0 => {
                let level = ceilings.level_for(work.bytes)?;
                let at = work.bytes / work.seconds / 1e9;
                if at * OVERHEAD_FACTOR < level.gb_per_s {
                    Bound::Overhead
                } else {
                    Bound::Memory
                }
            }
            None => continue,
        };
        match bound {
            Bound::Compute => roof.compute_bound_s += work.seconds,
            Bound::Memory => roof.memory_bound_s += work.seconds,
            Bound::Overhead => roof.overhead_bound_s += work.seconds,
        }
    }
    roof.of_roof = roof.roof_time_s / measured_s;
    roof.achieved_gflops_per_s = roof.flops / measured_s / 1e9;
    roof.of_nominal = ceilings
        .nominal_gflops_per_s
        .filter(|n| *n > 0.0)
        .map(|n| roof.achieved_gflops_per_s / n);
    Some(roof)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 100 GFLOP/s; L2 of 1 MB at 200 GB/s; DRAM at 20 GB/s.
    fn ceilings() -> Ceilings {
        Ceilings {
            compute_gflops_per_s: 100.0,
            compute_primitive: "matrix product".into(),
            memory: vec![
                MemoryCeiling {
                    level: "L2".into(),
                    holds_bytes: Some(1_000_000),
                    gb_per_s: 200.0,
                },
                MemoryCeiling {
                    level: "DRAM".into(),
                    holds_bytes: None,
                    gb_per_s: 20.0,
                },
            ],
            nominal_gflops_per_s: Some(200.0),
        }
    }

    #[test]
    fn a_layer_is_judged_by_the_roof_of_the_level_that_holds_its_bytes() {
        let c = ceilings();
        // 10 MFLOP over 0.5 MB (in L2): intensity 20, ridge 0.5: compute-bound; roof
        // 100 GFLOP/s, least time 0.1 ms; run in 0.2 ms: half the roof.
        let dense = layer(&c, 10e6, 0.5e6, 0.2e-3).unwrap();
        assert_eq!(dense.memory_level, "L2");
        assert_eq!(dense.bound, Bound::Compute);
        assert!((dense.intensity - 20.0).abs() < 1e-12);
        assert!((dense.of_roof - 0.5).abs() < 1e-9);
        assert!((dense.roof_time_s - 0.1e-3).abs() < 1e-12);
        assert!((dense.of_nominal.unwrap() - 0.25).abs() < 1e-9);
        // 1 MFLOP over 10 MB (from DRAM): intensity 0.1, ridge 5: memory-bound; roof
        // 2 GFLOP/s, least time 0.5 ms; run in 1 ms: half the roof.
        let stream = layer(&c, 1e6, 10e6, 1e-3).unwrap();
        assert_eq!(stream.memory_level, "DRAM");
        assert_eq!(stream.bound, Bound::Memory);
        assert!((stream.roof_gflops_per_s - 2.0).abs() < 1e-9);
        assert!((stream.of_roof - 0.5).abs() < 1e-9);
        // The same layer ten times slower is beyond what either roof explains.
        let slow = layer(&c, 1e6, 10e6, 10e-3).unwrap();
        assert_eq!(slow.bound, Bound::Overhead);
        // Nothing to judge: no FLOPs, no time, no ceilings.
        assert!(layer(&c, 0.0, 1e6, 1e-3).is_none());
        assert!(layer(&c, 1e6, 1e6, 0.0).is_none());
        let broken = Ceilings {
            compute_gflops_per_s: 0.0,
            ..ceilings()
        };
        assert!(layer(&broken, 1e6, 1e6, 1e-3).is_none());
    }

    #[test]
    fn the_network_is_the_sum_of_its_layers_roof_times_over_the_measured_time() {
        let c = ceilings();
        let layers = [
            // Compute-bound at 0.1 ms least, run in 0.2 ms.
            LayerWork {
                flops: 10e6,
                bytes: 0.5e6,
                seconds: 0.2e-3,
            },
            // A ReLU of 10 MB from DRAM: 0.5 ms least, run in 1 ms (memory-bound).
            LayerWork {
                flops: 0.0,
                bytes: 10e6,
                seconds: 1e-3,
            },
            // A ReLU far slower than its bandwidth: overhead.
            LayerWork {
                flops: 0.0,
                bytes: 10e3,
                seconds: 1e-3,
            },
        ];
        let net = network(&c, &layers, 2.4e-3).unwrap();
        let least = 0.1e-3 + 0.5e-3 + 10e3 / 200e9;
        assert!((net.roof_time_s - least).abs() < 1e-12);
        assert!((net.of_roof - least / 2.4e-3).abs() < 1e-9);
        assert!((net.compute_bound_s - 0.2e-3).abs() < 1e-12);
        assert!((net.memory_bound_s - 1e-3).abs() < 1e-12);
        assert!((net.overhead_bound_s - 1e-3).abs() < 1e-12);
        assert!((net.achieved_gflops_per_s - 10e6 / 2.4e-3 / 1e9).abs() < 1e-9);
        assert!(network(&c, &layers, 0.0).is_none());
    }
}
