//! Sessions for the scenarios' tests whose every query sleeps: they need no CPU, so the
//! tests do not need an idle machine.

use super::{drive, Driven, Serving, SERVING};
use anyhow::Result;
use cnnbench_engine::Session;
use cnnbench_results::scenario::ScenarioSpec;
use std::time::Duration;

/// A session whose every query sleeps a fixed time: it needs no CPU, so the test
/// does not need an idle machine.
pub struct Sleeping {
    pub took: Duration,
    pub calls: usize,
}

impl Session for Sleeping {
    fn prepare_batch(&mut self) -> Result<()> {
        Ok(())
    }
    fn forward(&mut self) -> Result<()> {
        self.calls += 1;
        std::thread::sleep(self.took);
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
}

pub fn sessions(n: usize, took: Duration) -> Vec<Sleeping> {
    (0..n).map(|_| Sleeping { took, calls: 0 }).collect()
}

pub fn run(sessions: &mut [Sleeping], spec: &ScenarioSpec, batch: usize) -> Driven {
    let serving = Serving {
        sessions: sessions
            .iter_mut()
            .map(|s| s as &mut (dyn Session + 'static))
            .collect(),
        batch_sessions: Vec::new(),
        description: SERVING.into(),
    };
    drive(serving, spec, 11, batch, &|| Ok(()), &mut |_, _, _| {}).unwrap()
}

pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}
