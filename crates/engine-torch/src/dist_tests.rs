//! Data-parallel training on c10d/Gloo: two ranks in one process (a thread each, a real
//! TCPStore and Gloo over TCP on localhost). The averaged gradients must be what
//! DistributedDataParallel computes.
#![allow(
    clippy::disallowed_macros,
    reason = "a test's note for whoever reads the test log"
)]

use crate::dist::{Collectives, TorchProcessGroup};
use crate::*;
use cnnbench_engine::distributed::Rendezvous;
use cnnbench_engine::{Engine, Mode, Session, SessionConfig};
use cnnbench_graph::ops::{Conv2d, MaxPool2d};
use cnnbench_graph::SplitMix64;
use cnnbench_graph::{Graph, GraphBuilder, HostTensor, Weights};
use std::sync::Arc;
use std::time::Duration;

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn rendezvous(rank: usize, world_size: usize, port: u16) -> Rendezvous {
    Rendezvous {
        rank,
        world_size,
        local_rank: rank,
        master_addr: "127.0.0.1".into(),
        master_port: port,
        launcher_serves_store: false,
        store_prefix: "test/".into(),
        timeout: Duration::from_secs(20),
    }
}

fn random(shape: &[usize], seed: u64) -> HostTensor {
    let mut rng = SplitMix64::new(seed);
    let n = shape.iter().product();
    let data = (0..n).map(|_| rng.next_f64() as f32 * 2.0 - 1.0).collect();
    HostTensor::new(shape.to_vec(), data).unwrap()
}

/// Rows `from..to` of a batch.
fn rows(t: &HostTensor, from: usize, to: usize) -> HostTensor {
    let per = t.data.len() / t.shape[0];
    let mut shape = t.shape.clone();
    shape[0] = to - from;
    HostTensor::new(shape, t.data[from * per..to * per].to_vec()).unwrap()
}

fn train_config(batch: usize) -> SessionConfig {
    SessionConfig {
        mode: Mode::Train,
        batch_size: batch,
        seed: 3,
        precision: Precision::F32,
        deterministic: true,
        calibration: None,
    }
}

/// One forward and backward pass on `input` with upstream gradient `grad`.
fn backward(s: &mut dyn Session, input: &HostTensor, grad: &HostTensor) {
    s.set_input(input).unwrap();
    s.forward().unwrap();
    s.set_output_grad(grad).unwrap();
    s.backward().unwrap();
}

/// Each of `world` ranks (threads) starts from `weights`, runs one pass on its slice of
/// `input`/`grad` and all-reduces; returns every rank's gradients.
fn data_parallel_gradients(
    graph: &Graph,
    weights: &Weights,
    input: &HostTensor,
    grad: &HostTensor,
    world: usize,
) -> Vec<Weights> {
    let port = free_port();
    let per_rank = input.shape[0] / world;
    let handles: Vec<_> = (0..world)
        .map(|rank| {
            let (graph, weights) = (graph.clone(), weights.clone());
            let input = rows(input, rank * per_rank, (rank + 1) * per_rank);
            let grad = rows(grad, rank * per_rank, (rank + 1) * per_rank);
            std::thread::spawn(move || {
                let group = Arc::new(
                    TorchProcessGroup::join(&rendezvous(rank, world, port), Collectives::Gloo)
                        .unwrap(),
                );
                let engine = TorchEngine::new(TorchBackend::Cpu, &TorchOptions::default())
                    .unwrap()
                    .with_group(group);
                let mut s = engine.prepare(&graph, &train_config(per_rank)).unwrap();
                let info = s.data_parallel().unwrap();
                assert_eq!((info.rank, info.world_size), (rank, world));
                assert_eq!(info.backend, "gloo");
                s.import_weights(&weights).unwrap();
                backward(s.as_mut(), &input, &grad);
                s.all_reduce_gradients().unwrap();
                s.weight_gradients().unwrap()
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

/// The gradients of one process on `input`, times `scale`.
fn single_gradients(
    graph: &Graph,
    weights: &Weights,
    input: &HostTensor,
    grad: &HostTensor,
    scale: f32,
) -> Weights {
    let engine = TorchEngine::new(TorchBackend::Cpu, &TorchOptions::default()).unwrap();
    let mut s = engine
        .prepare(graph, &train_config(input.shape[0]))
        .unwrap();
    s.import_weights(weights).unwrap();
    backward(s.as_mut(), input, grad);
    let mut out = Weights::new();
    for (key, t) in s.weight_gradients().unwrap().iter() {
        let data = t.data.iter().map(|v| v * scale).collect();
        out.insert(key.clone(), HostTensor::new(t.shape.clone(), data).unwrap());
    }
    out
}

/// The largest difference between two sets of gradients, relative to the largest value.
fn max_relative_difference(a: &Weights, b: &Weights) -> f32 {
    assert_eq!(a.len(), b.len());
    let mut worst = 0.0f32;
    for (key, x) in a.iter() {
        let y = b.get(key).unwrap_or_else(|| panic!("{key} is missing"));
        let scale = y.data.iter().fold(1e-6f32, |m, v| m.max(v.abs()));
        for (p, q) in x.data.iter().zip(&y.data) {
            worst = worst.max((p - q).abs() / scale);
        }
    }
    worst
}

fn initial_weights(graph: &Graph) -> Weights {
    let engine = TorchEngine::new(TorchBackend::Cpu, &TorchOptions::default()).unwrap();
    engine
        .prepare(graph, &train_config(1))
        .unwrap()
        .export_weights()
        .unwrap()
}

/// Without batch norm a network's gradient is a sum over images, so the average of two
/// ranks' gradients (each on half the batch) is the 1-rank gradient of the whole batch,
/// halved (train mode backpropagates a given upstream gradient, not a mean loss).
#[test]
fn averaged_gradients_equal_the_gradient_of_the_whole_batch() {
    let mut b = GraphBuilder::new("small", [3, 16, 16]);
    let x = b.input();
    let x = b.conv("conv1", &x, Conv2d::new(8, 3));
    let x = b.relu("relu1", &x);
    let x = b.max_pool("pool", &x, MaxPool2d::new(2, 2));
    let x = b.conv("conv2", &x, Conv2d::new(8, 3));
    let x = b.relu("relu2", &x);
    let x = b.flatten("flat", &x);
    let y = b.linear("fc", &x, 10);
    let graph = b.finish(&y).unwrap();
    let weights = initial_weights(&graph);
    let input = random(&[4, 3, 16, 16], 1);
    let grad = random(&[4, 10], 2);
    let ranks = data_parallel_gradients(&graph, &weights, &input, &grad, 2);
    let whole = single_gradients(&graph, &weights, &input, &grad, 0.5);
    for (rank, g) in ranks.iter().enumerate() {
        let d = max_relative_difference(g, &whole);
        assert!(d < 1e-5, "rank {rank} differs from the whole batch by {d}");
    }
}

/// resnet18 at 32×32 on two ranks: every rank holds the same gradients, the mean of
/// the two ranks' own. (With batch norm, that is not the whole batch's gradient: each
/// rank normalises with its own batch's statistics, as DDP without SyncBatchNorm does.)
#[test]
fn resnet18_ranks_hold_the_mean_of_their_gradients() {
    let graph = cnnbench_zoo::build("resnet18", Some([3, 32, 32])).unwrap();
    let weights = initial_weights(&graph);
    let input = random(&[4, 3, 32, 32], 5);
    let grad = random(&[4, 1000], 6);
    let ranks = data_parallel_gradients(&graph, &weights, &input, &grad, 2);
    let half = |k: usize| {
        single_gradients(
            &graph,
            &weights,
            &rows(&input, 2 * k, 2 * k + 2),
            &rows(&grad, 2 * k, 2 * k + 2),
            0.5,
        )
    };
    let (a, b) = (half(0), half(1));
    let mut mean = Weights::new();
    for (key, x) in a.iter() {
        let y = b.get(key).unwrap();
        let data = x.data.iter().zip(&y.data).map(|(p, q)| p + q).collect();
        mean.insert(key.clone(), HostTensor::new(x.shape.clone(), data).unwrap());
    }
    assert_eq!(
        max_relative_difference(&ranks[0], &ranks[1]),
        0.0,
        "the ranks disagree"
    );
    let d = max_relative_difference(&ranks[0], &mean);
    assert!(
        d < 1e-5,
        "the ranks' gradients are not the mean of theirs: {d}"
    );
}

/// A rank that never comes makes the others give up with an error naming the
/// rendezvous, after the timeout, instead of waiting for ever.
#[test]
fn a_missing_rank_is_an_error_not_a_hang() {
    let mut r = rendezvous(0, 2, free_port());
    r.timeout = Duration::from_secs(2);
    let started = std::time::Instant::now();
    let e = match TorchProcessGroup::join(&r, Collectives::Gloo) {
        Ok(_) => panic!("joined a job whose other rank never started"),
        Err(e) => format!("{e:#}"),
    };
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert!(e.contains("rank 0 of 2 could not join"), "{e}");
}

#[cfg(not(cnnbench_nccl))]
#[test]
fn torch_cuda_ranks_are_refused_for_want_of_nccl() {
    assert_eq!(distributed_backends(), ["gloo"]);
    assert!(!crate::dist::shim_has_nccl());
    let e = match data_parallel_engine(
        TorchBackend::Cuda { cudnn: true },
        &TorchOptions::default(),
        &rendezvous(0, 1, 1),
    ) {
        Ok(_) => panic!("torch-cuda cannot train across processes without NCCL"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("NCCL") && e.contains("torch-cpu"), "{e}");
    // The shim itself refuses too, with an error rather than a crash.
    let e = match TorchProcessGroup::join(
        &rendezvous(0, 1, free_port()),
        Collectives::Nccl { device: 0 },
    ) {
        Ok(_) => panic!("an NCCL group in a build without NCCL"),
        Err(e) => format!("{e:#}"),
    };
    assert!(e.contains("not compiled into this build"), "{e}");
}

/// What build.rs found is what the shim was compiled with, and what `cnnbench engines`
/// and the refusals report.
#[cfg(cnnbench_nccl)]
#[test]
fn nccl_is_compiled_in_when_the_headers_were_found() {
    assert_eq!(distributed_backends(), ["gloo", "nccl"]);
    assert!(crate::dist::shim_has_nccl());
    assert_eq!(
        data_parallel_refusal(TorchBackend::Cuda { cudnn: true }),
        None
    );
    assert_eq!(data_parallel_refusal(TorchBackend::Cpu), None);
    let version = crate::dist::nccl_version().expect("libtorch_cuda's NCCL version");
    assert!(version.starts_with("2."), "{version}");
}

/// Without a GPU, a torch-cuda rank stops at once with the reason, before the
/// rendezvous (no other rank is started here: a hang would be the timeout, 20 s).
#[cfg(cnnbench_nccl)]
#[test]
fn a_torch_cuda_rank_without_a_gpu_gets_a_clear_error() {
    if tch::Cuda::device_count() > 0 {
        cnnbench_engine::test_prerequisite::skip_not_applicable(
            "a_torch_cuda_rank_without_a_gpu_gets_a_clear_error",
            "this machine has a GPU (scripts/gpu-check-nccl.sh runs NCCL there)",
        );
        return;
    }
    let started = std::time::Instant::now();
    let e = match data_parallel_engine(
        TorchBackend::Cuda { cudnn: true },
        &TorchOptions::default(),
        &rendezvous(0, 2, free_port()),
    ) {
        Ok(_) => panic!("torch-cuda ran without a GPU"),
        Err(e) => format!("{e:#}"),
    };
    assert!(e.contains("no CUDA GPU"), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // The shim's own NCCL path, reached directly: CUDA's error comes back as a message
    // (every C++ exception is caught), not an abort.
    let e = match TorchProcessGroup::join(
        &rendezvous(0, 1, free_port()),
        Collectives::Nccl { device: 0 },
    ) {
        Ok(_) => panic!("an NCCL group without a GPU"),
        Err(e) => format!("{e:#}"),
    };
    assert!(
        e.contains("rank 0 of 1 could not join") && e.contains("nccl"),
        "{e}"
    );
}

/// Many process groups in one process issue their first collectives at the same moment:
/// each is a first entry in PyTorch's flight recorder, which adds it to a map outside its
/// lock; without the shim's serialised issuing this crashed the test process (SIGSEGV),
/// about one run in 25 of the two-rank tests. Eight ranks, in rounds of fresh groups, each
/// broadcasting and all-reducing at once.
#[test]
fn groups_in_one_process_issue_collectives_at_the_same_time() {
    const WORLD: usize = 8;
    for round in 0..8 {
        let port = free_port();
        let start = Arc::new(std::sync::Barrier::new(WORLD));
        let handles: Vec<_> = (0..WORLD)
            .map(|rank| {
                let start = Arc::clone(&start);
                std::thread::spawn(move || {
                    let group =
                        TorchProcessGroup::join(&rendezvous(rank, WORLD, port), Collectives::Gloo)
                            .unwrap();
                    start.wait();
                    let mut weights = vec![tch::Tensor::from_slice(&[rank as f32; 4])];
                    group.broadcast_from_root(&mut weights).unwrap();
                    group.all_reduce_mean(&mut weights, 1 << 20).unwrap();
                    Vec::<f32>::try_from(&weights[0]).unwrap()
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), [0.0; 4], "round {round}");
        }
    }
}

/// A rank that fails after the join leaves its message in the store before it goes;
/// the other rank's next collective fails (its peer has gone) and says that message.
#[test]
fn a_collective_that_fails_names_the_rank_that_failed_and_why() {
    use cnnbench_engine::distributed::ProcessGroup;
    let port = free_port();
    let failing = std::thread::spawn(move || {
        let group = TorchProcessGroup::join(&rendezvous(1, 2, port), Collectives::Gloo).unwrap();
        group.announce_failure("out of memory preparing resnet50");
        drop(group);
    });
    let group = TorchProcessGroup::join(&rendezvous(0, 2, port), Collectives::Gloo).unwrap();
    failing.join().unwrap();
    let e = match group.barrier() {
        Ok(()) => panic!("a barrier with a rank that has gone"),
        Err(e) => format!("{e:#}"),
    };
    assert!(
        e.starts_with("rank 1 failed: out of memory preparing resnet50"),
        "{e}"
    );
    // Waiting for a result that rank will never send ends at once too (the rendezvous
    // timeout is 20 s), with its message once.
    let started = std::time::Instant::now();
    let e = match group.gather_to_root("result/0", b"rank 0's") {
        Ok(_) => panic!("gathered from a rank that has gone"),
        Err(e) => format!("{e:#}"),
    };
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(
        e.contains("rank 1 failed: out of memory preparing resnet50")
            && e.matches("out of memory").count() == 1,
        "{e}"
    );
}
