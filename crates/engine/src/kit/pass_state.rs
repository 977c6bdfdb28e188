//! What a training session holds between its calls — the output or the loss of the
//! last forward, and the gradient backward starts from — with the order the `Session`
//! calls must come in, checked and worded alike in every engine.

use crate::Mode;
use anyhow::{anyhow, Context, Result};

/// The state between forward and backward. `T` is the engine's tensor (or value) type,
/// `L` its loss.
#[derive(Debug)]
pub struct PassState<T, L> {
    output: Option<T>,
    loss: Option<L>,
    output_grad: Option<T>,
}

/// What backward starts from.
pub enum BackwardFrom<T, L> {
    /// Step mode: the loss of forward.
    Loss(L),
    /// Train mode: the output, and the gradient it receives (as `output.backward(grad)`).
    Output { output: T, grad: T },
}

impl<T, L> Default for PassState<T, L> {
    fn default() -> Self {
        PassState {
            output: None,
            loss: None,
            output_grad: None,
        }
    }
}

impl<T, L> PassState<T, L> {
    /// A new batch: nothing of the last pass is kept.
    pub fn clear(&mut self) {
        *self = PassState::default();
    }

    /// Forward produced the network's output (train and infer modes).
    pub fn set_output(&mut self, output: T) {
        self.output = Some(output);
    }

    /// Forward produced the loss (step mode).
    pub fn set_loss(&mut self, loss: L) {
        self.loss = Some(loss);
    }

    /// The output of the last forward, for `Session::output`.
    pub fn output(&self) -> Result<&T> {
        self.output
            .as_ref()
            .context("no output: run forward first (in train or infer mode)")
    }

    /// The output, to make the gradient backward will start from.
    pub fn output_to_backpropagate(&self) -> Result<&T> {
        self.output.as_ref().context("no output to backpropagate")
    }

    /// The gradient the output receives in backward.
    pub fn set_output_grad(&mut self, grad: T) {
        self.output_grad = Some(grad);
    }

    /// What backward starts from in `mode`, taken (a second backward needs a new
    /// forward), or which call is missing.
    pub fn backward_from(&mut self, mode: Mode) -> Result<BackwardFrom<T, L>> {
        match mode {
            Mode::Infer => Err(anyhow!("inference mode has no backward pass")),
            Mode::Step => Ok(BackwardFrom::Loss(
                self.loss.take().context("no loss: run forward first")?,
            )),
            Mode::Train => {
                let output = self.output.take().context("no output: run forward first")?;
                let grad = self
                    .output_grad
                    .take()
                    .context("no upstream gradient: run prepare_output_grad first")?;
                Ok(BackwardFrom::Output { output, grad })
            }
        }
    }
}

/// The gradients the last backward pass left, or the one error every engine gives when
/// they are asked for before it.
pub fn last_gradients<G>(grads: &Option<G>) -> anyhow::Result<&G> {
    grads
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("no gradients: run backward first"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said<T>(r: Result<T>) -> String {
        r.err().map(|e| e.to_string()).unwrap_or_default()
    }

    #[test]
    fn backward_needs_its_calls_in_order_and_says_which_is_missing() {
        let mut s: PassState<u8, u16> = PassState::default();
        assert!(said(s.backward_from(Mode::Infer)).contains("no backward pass"));
        assert!(said(s.backward_from(Mode::Step)).contains("no loss: run forward first"));
        assert!(said(s.backward_from(Mode::Train)).contains("no output: run forward first"));
        s.set_output(1);
        assert_eq!(s.output().ok(), Some(&1));
        assert!(said(s.backward_from(Mode::Train)).contains("no upstream gradient"));
        // The failed attempt took the output: forward again.
        s.set_output(1);
        s.set_output_grad(2);
        match s.backward_from(Mode::Train) {
            Ok(BackwardFrom::Output { output, grad }) => assert_eq!((output, grad), (1, 2)),
            _ => panic!("train mode backpropagates the output"),
        }
        assert!(said(s.backward_from(Mode::Train)).contains("no output"));
        s.set_loss(7);
        assert!(matches!(
            s.backward_from(Mode::Step),
            Ok(BackwardFrom::Loss(7))
        ));
        s.set_output(3);
        s.clear();
        assert!(said(s.output()).contains("no output"));
    }
}
