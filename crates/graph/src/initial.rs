//! Seeded weights drawn from PyTorch's initial distributions ([`WeightInit`]), outside
//! any engine: what a file written for other runtimes (an ONNX export) carries when the
//! model came without weights, reproducible from the seed alone.

use crate::graph::Graph;
use crate::ops::WeightInit;
use crate::weights::{HostTensor, Weights};
use crate::SplitMix64;

impl Weights {
    /// Every weight tensor of `graph`, drawn in node order from one generator seeded with
    /// `seed`: uniform in `[-bound, bound]` or the constant its [`WeightInit`] says.
    pub fn initial(graph: &Graph, seed: u64) -> Weights {
        let mut rng = SplitMix64::new(seed);
        let mut weights = Weights::new();
        for spec in graph.weight_specs() {
            let n: usize = spec.shape.iter().product();
            let data: Vec<f32> = match spec.init {
                WeightInit::Uniform { bound } => (0..n)
                    .map(|_| ((2.0 * rng.next_f64() - 1.0) * bound) as f32)
                    .collect(),
                WeightInit::Constant(v) => vec![v as f32; n],
            };
            weights.insert(
                spec.key,
                HostTensor {
                    shape: spec.shape,
                    data,
                },
            );
        }
        weights
    }
}

#[cfg(test)]
mod tests {
    use crate::ops::Conv2d;
    use crate::{GraphBuilder, Weights};

    #[test]
    fn initial_weights_are_complete_seeded_and_within_pytorchs_bounds() {
        let mut b = GraphBuilder::new("t", [3, 8, 8]);
        let x = b.input();
        let c = b.conv("conv", &x, Conv2d::new(4, 3));
        let y = b.batch_norm("bn", &c);
        let g = b.finish(&y).unwrap();
        let w = Weights::initial(&g, 7);
        w.check(&g, true).unwrap();
        assert_eq!(w, Weights::initial(&g, 7));
        assert_ne!(w, Weights::initial(&g, 8));
        let conv = w.get("conv.weight").unwrap();
        let bound = 1.0 / 27f32.sqrt();
        assert!(conv.data.iter().all(|v| v.abs() <= bound));
        assert!(conv.max_abs() > bound * 0.8, "spread over the range");
        assert!(w
            .get("bn.running_var")
            .unwrap()
            .data
            .iter()
            .all(|&v| v == 1.0));
        assert!(w.get("bn.bias").unwrap().data.iter().all(|&v| v == 0.0));
    }
}
