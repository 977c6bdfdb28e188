//! `cnnbench verify`: proof that two engines compute the same network. Both get the
//! same weights, the same input batch and the same upstream gradient; the outputs (in
//! training and in inference mode) and every weight's gradient are compared.

use anyhow::{anyhow, Context, Result};
use cnnbench_engine::{Engine, Mode, Precision, Session, SessionConfig};
use cnnbench_graph::{max_relative_error, relative_l2_error, Graph, HostTensor, Weights};
use serde::Serialize;

/// The fp32 tolerance: the largest difference relative to the reference tensor's largest
/// magnitude. Two correct fp32 engines differ by summation order only.
pub const DEFAULT_TOLERANCE: f64 = 1e-4;

/// Relative size of the input perturbation that measures the network's own sensitivity
/// (a few units in the last place of f32).
pub const PERTURBATION: f64 = 1e-6;

/// A difference within this multiple of the reference's own sensitivity is rounding, not
/// a different computation.
pub const FLOOR_FACTOR: f64 = 10.0;

/// Perturbed runs of the reference engine that measure the noise floor.
const FLOOR_DRAWS: u64 = 2;

/// What to verify.
#[derive(Clone, Debug)]
pub struct VerifyRequest {
    pub batch_size: usize,
    /// Seeds the input and upstream gradient (and the weights when none are given).
    pub seed: u64,
    pub tolerance: f64,
    /// Weights to load into both engines; `None`: the reference engine's random ones.
    pub weights: Option<Weights>,
}

/// One compared tensor.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Comparison {
    /// `output (train)`, `output (infer)` or `grad <node>.<tensor>`.
    pub name: String,
    pub max_relative_error: f64,
    /// `‖candidate − reference‖₂ / ‖reference‖₂`.
    pub relative_l2_error: f64,
    /// The reference tensor's largest magnitude (the error's scale).
    pub reference_scale: f64,
    /// The reference engine against itself with the input perturbed by [`PERTURBATION`]:
    /// how far rounding alone moves this tensor in this network (ReLUs whose input sits
    /// next to zero flip, max-pooling ties break the other way, batch statistics over few
    /// values amplify). Deep random-weight networks are this sensitive; a wrong lowering
    /// is far above it.
    pub noise_floor: f64,
}

impl Comparison {
    /// Within the tolerance, or within [`FLOOR_FACTOR`] × the noise floor.
    pub fn passes(&self, tolerance: f64) -> bool {
        self.max_relative_error <= tolerance
            || self.max_relative_error <= FLOOR_FACTOR * self.noise_floor
    }
}

/// The outcome of one verification.
#[derive(Clone, Debug, Serialize)]
pub struct VerifyReport {
    pub model: String,
    pub input: [usize; 4],
    pub reference: String,
    pub candidate: String,
    pub tolerance: f64,
    /// Where the weights came from.
    pub weights: String,
    pub comparisons: Vec<Comparison>,
}

impl VerifyReport {
    /// The largest error of all comparisons.
    pub fn worst(&self) -> Option<&Comparison> {
        self.comparisons
            .iter()
            .max_by(|a, b| a.max_relative_error.total_cmp(&b.max_relative_error))
    }
    /// True when every comparison passes (NaN never does).
    pub fn passed(&self) -> bool {
        self.comparisons.iter().all(|c| c.passes(self.tolerance))
    }
    /// Comparisons that fail, worst first.
    pub fn failures(&self) -> Vec<&Comparison> {
        let mut failed: Vec<&Comparison> = self
            .comparisons
            .iter()
            .filter(|c| !c.passes(self.tolerance))
            .collect();
        failed.sort_by(|a, b| b.max_relative_error.total_cmp(&a.max_relative_error));
        failed
    }
}

fn session(
    engine: &dyn Engine,
    graph: &Graph,
    mode: Mode,
    request: &VerifyRequest,
) -> Result<Box<dyn Session>> {
    let config = SessionConfig {
        mode,
        batch_size: request.batch_size,
        seed: request.seed,
        precision: Precision::F32,
        deterministic: true,
    };
    engine
        .prepare(graph, &config)
        .with_context(|| format!("{} cannot run {}", engine.info().name, graph.name()))
}

/// `t` with every element moved by a relative [`PERTURBATION`] (standard-normal factors).
fn perturb(t: &HostTensor, seed: u64) -> HostTensor {
    let noise = HostTensor::standard_normal(t.shape.clone(), seed);
    let mut out = t.clone();
    for (x, n) in out.data.iter_mut().zip(&noise.data) {
        *x = (*x as f64 * (1.0 + PERTURBATION * *n as f64)) as f32;
    }
    out
}

/// What one engine computed: outputs in both modes and the weight gradients.
struct Computed {
    train_output: HostTensor,
    gradients: Weights,
    infer_output: HostTensor,
}

/// Runs one engine on the given weights and input. The upstream gradient is drawn from
/// `seed` for the output's shape, so every engine gets the same one.
fn compute(
    engine: &dyn Engine,
    graph: &Graph,
    request: &VerifyRequest,
    weights: &Weights,
    input: &HostTensor,
    seed: u64,
) -> Result<Computed> {
    let name = engine.info().name;
    let mut train = session(engine, graph, Mode::Train, request)?;
    train
        .import_weights(weights)
        .with_context(|| format!("loading the weights into {name}"))?;
    train.set_input(input)?;
    train
        .forward()
        .with_context(|| format!("{name}: forward"))?;
    let train_output = train.output()?;
    let upstream = HostTensor::standard_normal(train_output.shape.clone(), seed);
    train.set_output_grad(&upstream)?;
    train
        .backward()
        .with_context(|| format!("{name}: backward"))?;
    let gradients = train.weight_gradients()?;
    drop(train);
    let mut infer = session(engine, graph, Mode::Infer, request)?;
    infer
        .import_weights(weights)
        .with_context(|| format!("loading the weights into {name}"))?;
    infer.set_input(input)?;
    infer
        .forward()
        .with_context(|| format!("{name}: forward"))?;
    Ok(Computed {
        train_output,
        gradients,
        infer_output: infer.output()?,
    })
}

/// Runs `graph` on both engines and compares them. `reference` supplies the weights
/// unless the request carries some; it also runs once more on a slightly perturbed input
/// to measure how sensitive each tensor is to rounding (the noise floor).
pub fn verify(
    graph: &Graph,
    reference: &dyn Engine,
    candidate: &dyn Engine,
    request: &VerifyRequest,
) -> Result<VerifyReport> {
    let (ref_name, cand_name) = (reference.info().name, candidate.info().name);
    if request.batch_size == 0 {
        return Err(anyhow!("the batch size must be at least 1"));
    }
    let (weights, source) = match &request.weights {
        Some(w) => {
            w.check(graph, true)?;
            (w.clone(), "given".to_string())
        }
        None => (
            session(reference, graph, Mode::Train, request)?
                .export_weights()
                .with_context(|| format!("exporting {ref_name}'s weights"))?,
            format!("random, from {ref_name}"),
        ),
    };
    let [c, h, w] = graph.input_shape();
    let input = HostTensor::standard_normal(vec![request.batch_size, c, h, w], request.seed);
    // Rounding differs between engines in every layer, so the floor runs perturb every
    // weight as well as the input; two draws, because one can miss a sensitive unit.
    let grad_seed = request.seed.wrapping_add(1);
    let base = compute(reference, graph, request, &weights, &input, grad_seed)?;
    let mut shaken = Vec::new();
    for draw in 0..FLOOR_DRAWS {
        let seed = request.seed.wrapping_add(1000 * (draw + 1));
        let mut perturbed_weights = Weights::new();
        for (i, (key, tensor)) in weights.iter().enumerate() {
            perturbed_weights.insert(
                key.clone(),
                perturb(tensor, seed.wrapping_add(1 + i as u64)),
            );
        }
        shaken.push(compute(
            reference,
            graph,
            request,
            &perturbed_weights,
            &perturb(&input, seed),
            grad_seed,
        )?);
    }
    let cand = compute(candidate, graph, request, &weights, &input, grad_seed)?;

    let compare =
        |name: String, pick: &dyn Fn(&Computed) -> Result<HostTensor>| -> Result<Comparison> {
            let reference = pick(&base)?;
            let candidate = pick(&cand)?;
            let mut noise_floor = 0.0f64;
            for s in &shaken {
                noise_floor = noise_floor.max(max_relative_error(&pick(s)?, &reference)?);
            }
            Ok(Comparison {
                max_relative_error: max_relative_error(&candidate, &reference)
                    .with_context(|| format!("comparing {name}"))?,
                relative_l2_error: relative_l2_error(&candidate, &reference)?,
                reference_scale: reference.max_abs() as f64,
                noise_floor,
                name,
            })
        };
    if cand.gradients.len() != base.gradients.len() {
        return Err(anyhow!(
            "{cand_name} returned {} gradients, {ref_name} {}",
            cand.gradients.len(),
            base.gradients.len()
        ));
    }
    let mut comparisons = vec![compare("output (train)".into(), &|c| {
        Ok(c.train_output.clone())
    })?];
    for key in base.gradients.iter().map(|(k, _)| k.clone()) {
        let pick = |c: &Computed| -> Result<HostTensor> {
            c.gradients
                .get(&key)
                .cloned()
                .with_context(|| format!("no gradient for \"{key}\""))
        };
        comparisons.push(compare(format!("grad {key}"), &pick)?);
    }
    comparisons.push(compare("output (infer)".into(), &|c| {
        Ok(c.infer_output.clone())
    })?);

    Ok(VerifyReport {
        model: graph.name().to_string(),
        input: [request.batch_size, c, h, w],
        reference: ref_name,
        candidate: cand_name,
        tolerance: request.tolerance,
        weights: source,
        comparisons,
    })
}
