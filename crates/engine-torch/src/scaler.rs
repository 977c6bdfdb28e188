//! Loss scaling for training in `amp-f16`, as `torch.amp.GradScaler` does it with its
//! defaults: f16 gradients of small losses underflow to zero without it.

use crate::aten::unscale_gradients;
use anyhow::Result;
use tch::{Device, Kind, Tensor};

/// GradScaler's defaults (torch/amp/grad_scaler.py).
const INITIAL_SCALE: f64 = 65536.0;
const GROWTH_FACTOR: f64 = 2.0;
const BACKOFF_FACTOR: f64 = 0.5;
const GROWTH_INTERVAL: i64 = 2000;

/// The scale and its bookkeeping, on the device the gradients are on, so that nothing
/// but the found-infinity flag crosses to the host (as in PyTorch, once per step).
pub struct GradScaler {
    scale: Tensor,
    growth_tracker: Tensor,
}

impl GradScaler {
    pub fn new(device: Device) -> Result<Self> {
        Ok(Self {
            scale: Tensor::f_full([1], INITIAL_SCALE, (Kind::Float, device))?,
            growth_tracker: Tensor::f_zeros([1], (Kind::Int, device))?,
        })
    }

    /// The loss multiplied by the scale, to backpropagate instead of the loss.
    pub fn scale(&self, loss: &Tensor) -> Result<Tensor> {
        Ok(loss.f_mul(&self.scale.f_to_kind(loss.kind())?)?)
    }

    /// `scaler.step(optimizer); scaler.update()`: the gradients are unscaled in place;
    /// `step` runs only when every one of them is finite; the scale then halves (after
    /// a non-finite gradient) or doubles (after `GROWTH_INTERVAL` finite steps).
    /// Returns whether `step` ran.
    pub fn step(
        &mut self,
        grads: &mut [Tensor],
        step: impl FnOnce() -> Result<()>,
    ) -> Result<bool> {
        let mut found_inf = self.scale.f_zeros_like()?;
        let mut inv_scale = self.scale.f_reciprocal()?;
        unscale_gradients(grads, &mut found_inf, &mut inv_scale)?;
        let finite = found_inf.f_double_value(&[0])? == 0.0;
        if finite {
            step()?;
        }
        let _scale = self.scale.f_internal_amp_update_scale_(
            &self.growth_tracker,
            &found_inf,
            GROWTH_FACTOR,
            BACKOFF_FACTOR,
            GROWTH_INTERVAL,
        )?;
        Ok(finite)
    }

    /// The current scale.
    #[cfg(test)]
    pub fn current(&self) -> Result<f64> {
        Ok(self.scale.f_double_value(&[0])?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A finite step: gradients divided by the scale, the step taken, the scale kept
    /// (growth waits 2000 steps). A non-finite one: no step, the scale halved.
    #[test]
    fn unscales_steps_when_finite_and_backs_off_when_not() {
        let mut scaler = GradScaler::new(Device::Cpu).unwrap();
        let loss = Tensor::from_slice(&[0.5f32]);
        let scaled = scaler.scale(&loss).unwrap();
        assert_eq!(scaled.double_value(&[0]), 0.5 * INITIAL_SCALE);
        let mut grads = vec![
            Tensor::from_slice(&[INITIAL_SCALE as f32, 2.0 * INITIAL_SCALE as f32]),
            Tensor::from_slice(&[4.0 * INITIAL_SCALE as f32]),
        ];
        let mut stepped = false;
        assert!(scaler
            .step(&mut grads, || {
                stepped = true;
                Ok(())
            })
            .unwrap());
        assert!(stepped);
        assert_eq!(Vec::<f32>::try_from(&grads[0]).unwrap(), [1.0, 2.0]);
        assert_eq!(Vec::<f32>::try_from(&grads[1]).unwrap(), [4.0]);
        assert_eq!(scaler.current().unwrap(), INITIAL_SCALE);

        let mut grads = vec![Tensor::from_slice(&[1.0f32, f32::INFINITY])];
        let ran = scaler
            .step(&mut grads, || panic!("a step on a non-finite gradient"))
            .unwrap();
        assert!(!ran);
        assert_eq!(scaler.current().unwrap(), INITIAL_SCALE * BACKOFF_FACTOR);
    }
}
