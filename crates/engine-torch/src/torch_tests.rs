//! The libtorch engine: the engine kit's conformance suite with burn-flex as the
//! reference (every op, forward and backward, and a few zoo models), every zoo model
//! against burn-flex and in every mode, weights in and out, what it records and refuses.

use crate::*;
use cnnbench_engine::{Engine, Mode, SessionConfig};
use cnnbench_graph::{HostTensor, Weights};

fn cpu() -> TorchEngine {
    TorchEngine::new(TorchBackend::Cpu, &TorchOptions::default()).unwrap()
}

fn burn() -> Box<dyn Engine> {
    Box::new(cnnbench_engine_burn::BurnFlexEngine::new(None).unwrap())
}

cnnbench_conformance::engine_conformance! {
    engine: Box::new(cpu()) as Box<dyn Engine>,
    reference: Some(burn()),
}

/// The other direction: libtorch's initialisation, burn-flex as the candidate.
#[test]
fn burn_agrees_with_torch_as_the_reference() {
    if let Err(e) = cnnbench_conformance::ops_against(&*burn(), &cpu()) {
        panic!("{e:#}");
    }
}

/// Every zoo model, torch-cpu against burn-flex through `verify`: 241 s on the 2-core
/// development VM, most of `.ci/run`'s optional-engine tests, so CI runs four zoo models
/// (`conformance_models_against_reference`) and this runs from
/// `scripts/torch-zoo-conformance.sh`.
#[test]
#[ignore = "about 4 minutes on 2 cores: scripts/torch-zoo-conformance.sh runs it"]
fn every_zoo_model_computes_what_burn_computes() {
    let (torch, burn) = (cpu(), burn());
    let failures: Vec<String> = cnnbench_zoo::entries()
        .iter()
        .filter_map(|entry| {
            let [c, h, w] = entry.smallest_input();
            let graph = (entry.build)([c, h.max(32), w.max(32)]).unwrap();
            // Four images, so batch statistics never come from one or two values.
            cnnbench_conformance::check_against(&torch, &*burn, &graph, 4)
                .err()
                .map(|e| format!("{e:#}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn config(mode: Mode, precision: Precision) -> SessionConfig {
    SessionConfig {
        mode,
        batch_size: 2,
        seed: 1,
        precision,
        deterministic: false,
        calibration: None,
    }
}

#[test]
fn every_zoo_model_runs_in_every_mode() {
    let engine = cpu();
    for entry in cnnbench_zoo::entries() {
        let graph = (entry.build)(entry.smallest_input()).unwrap();
        for mode in [Mode::Train, Mode::Infer, Mode::Step] {
            let mut s = engine
                .prepare(&graph, &config(mode, Precision::F32))
                .unwrap_or_else(|e| panic!("{} {mode}: {e:#}", entry.name));
            s.prepare_batch().unwrap();
            s.forward().unwrap();
            if mode == Mode::Train {
                s.prepare_output_grad().unwrap();
            }
            if mode != Mode::Infer {
                s.backward().unwrap();
            }
            if mode == Mode::Step {
                s.update().unwrap();
            }
            s.sync().unwrap();
        }
        // Parameter count of what libtorch allocated equals the Graph's.
        let mut s = engine
            .prepare(&graph, &config(Mode::Train, Precision::F32))
            .unwrap();
        let weights = s.export_weights().unwrap();
        weights.check(&graph, true).unwrap();
        let trainable: u64 = graph
            .weight_specs()
            .iter()
            .filter(|w| w.trainable)
            .map(|w| weights.get(&w.key).unwrap().data.len() as u64)
            .sum();
        assert_eq!(trainable, graph.params(), "{}", entry.name);
    }
}

#[test]
fn weights_go_in_and_come_out_unchanged() {
    let engine = cpu();
    let graph = cnnbench_zoo::build("resnet18", Some([3, 32, 32])).unwrap();
    let mut s = engine
        .prepare(&graph, &config(Mode::Train, Precision::F32))
        .unwrap();
    let mut weights = Weights::new();
    for (i, spec) in graph.weight_specs().into_iter().enumerate() {
        let mut t = HostTensor::standard_normal(spec.shape, i as u64);
        if spec.key.ends_with("running_var") {
            t.data.iter_mut().for_each(|v| *v = v.abs() + 0.5);
        }
        weights.insert(spec.key, t);
    }
    s.import_weights(&weights).unwrap();
    assert_eq!(s.export_weights().unwrap(), weights);

    let mut wrong = weights.clone();
    wrong.insert("fc.weight", HostTensor::standard_normal(vec![512, 1000], 0));
    let e = s.import_weights(&wrong).unwrap_err().to_string();
    assert!(e.contains("\"fc.weight\" has shape [512, 1000]"), "{e}");
}

#[test]
fn step_mode_changes_the_weights_and_train_mode_does_not() {
    let engine = cpu();
    let graph = cnnbench_zoo::build("resnet18", Some([3, 32, 32])).unwrap();
    for (mode, changes) in [(Mode::Step, true), (Mode::Train, false)] {
        let mut s = engine
            .prepare(&graph, &config(mode, Precision::F32))
            .unwrap();
        let before = s.export_weights().unwrap();
        s.prepare_batch().unwrap();
        s.forward().unwrap();
        if mode == Mode::Train {
            s.prepare_output_grad().unwrap();
        }
        s.backward().unwrap();
        if mode == Mode::Step {
            s.update().unwrap();
        }
        let after = s.export_weights().unwrap();
        let conv = |w: &Weights| w.get("conv1.weight").unwrap().clone();
        assert_eq!(conv(&before) != conv(&after), changes, "{mode}");
    }
}

#[test]
fn bf16_runs_on_the_cpu_and_f16_is_refused() {
    let engine = cpu();
    let graph = cnnbench_zoo::build("resnet18", Some([3, 32, 32])).unwrap();
    let mut s = engine
        .prepare(&graph, &config(Mode::Train, Precision::Bf16))
        .unwrap();
    let input = HostTensor::standard_normal(vec![2, 3, 32, 32], 5);
    s.set_input(&input).unwrap();
    s.forward().unwrap();
    let out = s.output().unwrap();
    assert!(out.data.iter().all(|v| v.is_finite()));
    s.prepare_output_grad().unwrap();
    s.backward().unwrap();
    let grads = s.weight_gradients().unwrap();
    assert!(grads.get("conv1.weight").unwrap().max_abs() > 0.0);
    let e = engine
        .prepare(&graph, &config(Mode::Train, Precision::F16))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("it computes in: f32, bf16, amp-bf16"), "{e}");
}

/// `bf16` converts the whole model (its weights are bf16 values), `amp-bf16` keeps f32
/// master weights and computes convolutions and linear layers in bf16 (its outputs are
/// bf16 values, its weights are not).
#[test]
fn bf16_casts_the_model_and_amp_bf16_keeps_f32_weights() {
    let engine = cpu();
    let graph = cnnbench_zoo::build("resnet18", Some([3, 32, 32])).unwrap();
    let bf16_exact = |t: &HostTensor| t.data.iter().all(|v| v.to_bits() & 0xffff == 0);
    let input = HostTensor::standard_normal(vec![2, 3, 32, 32], 5);
    for (precision, weights_in_bf16) in [(Precision::Bf16, true), (Precision::AmpBf16, false)] {
        let mut s = engine
            .prepare(&graph, &config(Mode::Train, precision))
            .unwrap();
        s.set_input(&input).unwrap();
        s.forward().unwrap();
        let out = s.output().unwrap();
        assert!(
            bf16_exact(&out),
            "{precision:?}: the output is rounded to bf16"
        );
        s.prepare_output_grad().unwrap();
        s.backward().unwrap();
        let grads = s.weight_gradients().unwrap();
        assert!(grads.get("conv1.weight").unwrap().max_abs() > 0.0);
        let weights = s.export_weights().unwrap();
        let conv = weights.get("conv1.weight").unwrap();
        assert_eq!(bf16_exact(conv), weights_in_bf16, "{precision:?}");
    }
}

#[test]
fn info_names_libtorch_and_its_versions() {
    let info = cpu().info();
    assert_eq!(info.name, "torch-cpu");
    assert_eq!(info.framework, "libtorch");
    assert!(
        info.framework_version.starts_with("2.11.0"),
        "{}",
        info.framework_version
    );
    assert_eq!(info.libraries["tch"], "0.24.0");
    assert!(info.threads >= 1);
    assert_eq!(info.device, "cpu");
}

#[test]
fn cuda_is_refused_with_the_reason_when_there_is_no_gpu() {
    if std::path::Path::new("/dev/nvidia0").exists() {
        cnnbench_engine::test_prerequisite::skip_not_applicable(
            "cuda_is_refused_with_the_reason_when_there_is_no_gpu",
            "this machine has a GPU (scripts/gpu-check.sh covers it)",
        );
        return;
    }
    for backend in [
        TorchBackend::Cuda { cudnn: true },
        TorchBackend::Cuda { cudnn: false },
    ] {
        let e = TorchEngine::new(backend, &TorchOptions::default())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("no CUDA GPU is visible"), "{e}");
        assert!(availability(backend).is_err());
    }
    availability(TorchBackend::Cpu).unwrap();
}

/// `--channels-last`: the same function as burn-flex computes (outputs and gradients,
/// through the conformance check), with the input and the convolutions' weights and
/// outputs really laid out NHWC, and the setting recorded.
#[test]
fn channels_last_computes_the_same_in_nhwc_memory() {
    let options = TorchOptions {
        channels_last: true,
        ..TorchOptions::default()
    };
    let engine = TorchEngine::new(TorchBackend::Cpu, &options).unwrap();
    assert_eq!(
        engine
            .info()
            .settings
            .get("memory_format")
            .map(String::as_str),
        Some("channels_last")
    );
    assert!(!cpu().info().settings.contains_key("memory_format"));
    for name in ["resnet18", "mobilenet_v2"] {
        let graph = (cnnbench_zoo::find(name).unwrap().build)([3, 32, 32]).unwrap();
        if let Err(e) = cnnbench_conformance::check_against(&engine, &*burn(), &graph, 4) {
            panic!("{name} in channels-last: {e:#}");
        }
    }
    // The layout itself: a convolution's weight, its input and its output.
    let graph = (cnnbench_zoo::find("resnet18").unwrap().build)([3, 32, 32]).unwrap();
    let mut network =
        crate::lower::Network::lower(&graph, tch::Device::Cpu, Precision::F32).unwrap();
    network.use_channels_last().unwrap();
    let conv = network.parameters().find(|w| w.tensor.dim() == 4).unwrap();
    assert!(is_channels_last(&conv.tensor), "{:?}", conv.tensor.stride());
    let x = tch::Tensor::randn([2, 3, 32, 32], (tch::Kind::Float, tch::Device::Cpu));
    assert!(!is_channels_last(&x));
    let x = crate::lower::channels_last(&x).unwrap();
    assert!(is_channels_last(&x));
    let y = x.conv2d(&conv.tensor, None::<tch::Tensor>, [2], [3], [1], 1);
    assert!(is_channels_last(&y), "conv output strides {:?}", y.stride());
}

/// Whether a 4-D tensor is laid out channels-last (the channel stride is 1).
fn is_channels_last(t: &tch::Tensor) -> bool {
    let (size, stride) = (t.size(), t.stride());
    size.len() == 4 && (stride[1] == 1 || size[1] == 1) && stride[3] == size[1].max(1)
}

/// The ATen shim's autocast region: convolutions and matrix products compute in the
/// region's kind from f32 tensors, ops off autocast's lists keep their input's kind, a
/// nested region wins while it lasts, and leaving restores exactly what was there.
#[test]
fn an_autocast_region_casts_what_torch_autocast_casts_and_restores_the_state() {
    use crate::aten::{autocast_state, AutocastGuard};
    use tch::{Device, Kind, Tensor};
    let (was_on, was_kind) = autocast_state(Device::Cpu).unwrap();
    assert!(!was_on);
    let x = Tensor::randn([1, 3, 8, 8], (Kind::Float, Device::Cpu));
    let w = Tensor::randn([4, 3, 3, 3], (Kind::Float, Device::Cpu));
    {
        let _bf16 = AutocastGuard::enter(Device::Cpu, Kind::BFloat16).unwrap();
        assert_eq!(
            autocast_state(Device::Cpu).unwrap(),
            (true, Some(Kind::BFloat16))
        );
        let y = x.conv2d(&w, None::<Tensor>, [1], [1], [1], 1);
        assert_eq!(y.kind(), Kind::BFloat16);
        assert_eq!(x.f_add(&x).unwrap().kind(), Kind::Float);
        {
            let _f16 = AutocastGuard::enter(Device::Cpu, Kind::Half).unwrap();
            let m = x.flatten(1, -1).matmul(&x.flatten(1, -1).tr());
            assert_eq!(m.kind(), Kind::Half);
        }
        assert_eq!(
            autocast_state(Device::Cpu).unwrap(),
            (true, Some(Kind::BFloat16))
        );
    }
    assert_eq!(autocast_state(Device::Cpu).unwrap(), (false, was_kind));
    let y = x.conv2d(&w, None::<Tensor>, [1], [1], [1], 1);
    assert_eq!(y.kind(), Kind::Float);
    assert!(AutocastGuard::enter(Device::Cpu, Kind::Int64).is_err());
}

/// amp-bf16's forward runs in libtorch's autocast: a ResNet's output comes out in bf16
/// (its last linear layer is on autocast's list) while every weight stays f32, and the
/// process is out of autocast afterwards.
#[test]
fn amp_bf16_forward_runs_in_autocast_and_leaves_it() {
    use tch::{Device, Kind, Tensor};
    let graph = (cnnbench_zoo::find("resnet18").unwrap().build)([3, 32, 32]).unwrap();
    let network = crate::lower::Network::lower(&graph, Device::Cpu, Precision::AmpBf16).unwrap();
    assert_eq!(network.input_kind(), Kind::Float);
    let x = Tensor::randn([2, 3, 32, 32], (Kind::Float, Device::Cpu));
    let y = network.forward(&x, true).unwrap();
    assert_eq!(y.kind(), Kind::BFloat16);
    assert!(network.parameters().all(|w| w.tensor.kind() == Kind::Float));
    assert!(!crate::aten::autocast_state(Device::Cpu).unwrap().0);
}

/// After its timed passes a torch-cpu session says which kernels ran: oneDNN's
/// convolutions in f32 and ATen's vector capability; the standard output is back.
#[test]
fn a_cpu_session_records_the_kernels_that_ran() {
    let graph = (cnnbench_zoo::find("resnet18").unwrap().build)([3, 32, 32]).unwrap();
    let mut s = cpu()
        .prepare(&graph, &config(Mode::Train, Precision::F32))
        .unwrap();
    let chosen = s.kernels_chosen().unwrap();
    assert!(chosen.warnings.is_empty(), "{chosen:?}");
    let kernels = chosen.settings;
    let capability = &kernels["aten_cpu_capability"];
    assert!(
        ["DEFAULT", "AVX2", "AVX512", "ZVECTOR", "VSX", "SVE256"].contains(&capability.as_str()),
        "{kernels:?}"
    );
    let conv = &kernels["onednn_convolution"];
    assert!(!conv.starts_with("not oneDNN"), "{kernels:?}");
    assert!(conv.contains('×'), "{kernels:?}");
    assert!(kernels.contains_key("onednn_isa"), "{kernels:?}");
    // The session still runs: the capture left nothing behind.
    s.prepare_batch().unwrap();
    s.forward().unwrap();
    s.prepare_output_grad().unwrap();
    s.backward().unwrap();
}
