//! A session's input batches as host tensors: the shape it was prepared for, fresh
//! seeded draws, and the check on an input handed in from outside (`cnnbench verify`).
//! Engines that feed host tensors (ort-cpu, tract) draw through [`InputBatches`], so the
//! same seed gives every such engine the same inputs; every engine checks a given input
//! with [`check_input_shape`], so a wrong shape reads the same whichever engine refuses it.

use crate::SessionConfig;
use anyhow::{anyhow, Result};
use cnnbench_graph::{Graph, HostTensor};

/// The input batches of one session: `[N, C, H, W]` from the configuration's batch size
/// and the graph's input, each draw standard normal with its own seed (the session's
/// seed plus the number of batches drawn before it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputBatches {
    shape: [usize; 4],
    seed: u64,
    /// Batches drawn so far (each gets a fresh seed).
    draws: u64,
}

impl InputBatches {
    /// The batches of a session of `graph` set up by `config` (nothing drawn yet).
    pub fn new(graph: &Graph, config: &SessionConfig) -> Self {
        let [c, h, w] = graph.input_shape();
        Self {
            shape: [config.batch_size, c, h, w],
            seed: config.seed,
            draws: 0,
        }
    }

    /// `[N, C, H, W]`: what every batch, drawn or given, must be.
    pub fn shape(&self) -> [usize; 4] {
        self.shape
    }

    /// The batch size `N`.
    pub fn batch_size(&self) -> usize {
        self.shape[0]
    }

    /// Draws the next batch: standard normal, seeded by the session's seed plus the
    /// number of batches drawn before.
    pub fn next_input(&mut self) -> HostTensor {
        let seed = self.seed.wrapping_add(self.draws);
        self.draws += 1;
        HostTensor::standard_normal(self.shape.to_vec(), seed)
    }

    /// Refuses an input of any other shape than the session's.
    pub fn check_input(&self, input: &HostTensor) -> Result<()> {
        check_input_shape(input, &self.shape)
    }
}

/// Refuses an input whose shape is not `expected` (`[N, C, H, W]`), naming both, so a
/// session never runs on a batch it was not prepared for.
pub fn check_input_shape(input: &HostTensor, expected: &[usize]) -> Result<()> {
    if input.shape != expected {
        return Err(anyhow!(
            "the input has shape {:?} but this session takes {expected:?}",
            input.shape
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Mode, Precision};
    use cnnbench_graph::GraphBuilder;

    fn graph() -> Graph {
        let mut b = GraphBuilder::new("identity", [2, 3, 5]);
        let x = b.input();
        let y = b.add(
            "relu",
            cnnbench_graph::Op::Activation(cnnbench_graph::Activation::Relu),
            &[&x],
        );
        b.finish(&y).unwrap()
    }

    fn config(batch_size: usize, seed: u64) -> SessionConfig {
        SessionConfig {
            mode: Mode::Infer,
            batch_size,
            seed,
            precision: Precision::F32,
            deterministic: false,
            calibration: None,
        }
    }

    #[test]
    fn draws_are_seeded_by_the_session_seed_plus_the_draws_before() {
        let mut batches = InputBatches::new(&graph(), &config(4, 10));
        assert_eq!(batches.shape(), [4, 2, 3, 5]);
        assert_eq!(batches.batch_size(), 4);
        let first = batches.next_input();
        let second = batches.next_input();
        assert_eq!(first, HostTensor::standard_normal(vec![4, 2, 3, 5], 10));
        assert_eq!(second, HostTensor::standard_normal(vec![4, 2, 3, 5], 11));
        // The same seed gives another session the same batches.
        let mut again = InputBatches::new(&graph(), &config(4, 10));
        assert_eq!(again.next_input(), first);
        // The seed wraps rather than overflowing.
        let mut last = InputBatches::new(&graph(), &config(1, u64::MAX));
        last.next_input();
        assert_eq!(
            last.next_input(),
            HostTensor::standard_normal(vec![1, 2, 3, 5], 0)
        );
    }

    #[test]
    fn an_input_of_another_shape_is_refused_naming_both() {
        let batches = InputBatches::new(&graph(), &config(2, 0));
        let fits = HostTensor::standard_normal(vec![2, 2, 3, 5], 1);
        batches.check_input(&fits).unwrap();
        let wrong = HostTensor::standard_normal(vec![3, 2, 3, 5], 1);
        let err = batches.check_input(&wrong).unwrap_err().to_string();
        assert_eq!(
            err,
            "the input has shape [3, 2, 3, 5] but this session takes [2, 2, 3, 5]"
        );
    }
}
