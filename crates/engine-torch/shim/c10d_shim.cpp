// The C side of cnnbench's data-parallel training: PyTorch's own c10d (TCPStore,
// ProcessGroupGloo on CPUs, ProcessGroupNCCL on CUDA GPUs when build.rs compiles it
// with CNNBENCH_NCCL) driven through a small C ABI, so the Rust engine averages
// gradients exactly as torch.distributed / DDP do. Every C++ exception is caught here and
// returned as a malloc'd message that the caller frees with cnb_free; nothing throws
// across the boundary.

#include "shim_errors.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/torch.h>

#ifdef CNNBENCH_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/NCCLUtils.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

namespace {

using cnb::guarded;

}  // namespace

// A connection to the rendezvous store, under the job's key prefix.
struct cnb_store {
  c10::intrusive_ptr<c10d::Store> store;
};

struct cnb_group {
  c10::intrusive_ptr<c10d::Store> store;
  // ProcessGroupGloo or ProcessGroupNCCL.
  c10::intrusive_ptr<c10d::Backend> group;
  int rank;
  int world;
  std::chrono::milliseconds timeout;
  // A collective failed: teardown aborts instead of a clean shutdown, which could wait
  // for a peer that is gone.
  bool failed = false;
};

namespace {

// As `guarded`, but marks the group failed when `body` throws.
template <typename F>
char* guarded_on(cnb_group* g, F&& body) {
  char* error = guarded("c10d", std::forward<F>(body));
  if (error != nullptr) {
    g->failed = true;
  }
  return error;
}

// PyTorch's flight recorder (on by default, TORCH_FR_BUFFER_SIZE=2000) is one object per
// process, and it adds a process group to a std::map *before* taking its lock the first
// time the group issues a collective (FlightRecorderDetail.hpp, recordWithResetEnabled,
// PyTorch 2.11). Two groups issuing at once in one process, as the tests' two ranks on two
// threads do, can corrupt that map: a SIGSEGV in _Rb_tree_insert_and_rebalance, about one
// run in 25 of the two-rank tests on the 2-core EPYC. Issuing is serialised here; it only
// enqueues the work (Gloo's threads run it, NCCL a stream), so waits still overlap, and
// one rank per process (every real run) never contends for the lock.
template <typename F>
auto issued(F&& issue) {
  static std::mutex issue_mutex;
  std::lock_guard<std::mutex> guard(issue_mutex);
  return issue();
}

}  // namespace

extern "C" {

void cnb_free(void* p) {
  std::free(p);
}

// 1 when this shim was compiled with ProcessGroupNCCL.
int cnb_has_nccl() {
#ifdef CNNBENCH_NCCL
  return 1;
#else
  return 0;
#endif
}

// The NCCL version libtorch_cuda was built with ("2.28.9"), malloc'd; null without NCCL.
char* cnb_nccl_version() {
#ifdef CNNBENCH_NCCL
  try {
    return cnb::copy_message(c10d::getNcclVersion());
  } catch (...) {
    return nullptr;
  }
#else
  return nullptr;
#endif
}

// Connects to the rendezvous store (rank 0 serves it unless the launcher already does:
// `agent_store`, as torchrun's agent). A `counted` connection is a rank's own: it counts
// itself in, and the server (if ours) waits for every rank, as torch.distributed's env://
// rendezvous does. An uncounted one is a second client of the same store (the failure
// watch), which neither serves nor waits.
char* cnb_store_new(
    const char* host,
    int port,
    int rank,
    int world,
    int agent_store,
    const char* prefix,
    double timeout_s,
    int counted,
    cnb_store** out) {
  *out = nullptr;
  return guarded("c10d", [&] {
    c10d::TCPStoreOptions options;
    options.port = static_cast<std::uint16_t>(port);
    options.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000.0));
    if (counted != 0) {
      options.isServer = rank == 0 && agent_store == 0;
      options.numWorkers = static_cast<std::size_t>(world);
      options.waitWorkers = true;
    } else {
      options.isServer = false;
      options.waitWorkers = false;
    }
    auto tcp = c10::make_intrusive<c10d::TCPStore>(std::string(host), options);
    *out = new cnb_store{c10::make_intrusive<c10d::PrefixStore>(std::string(prefix), tcp)};
  });
}

void cnb_store_free(cnb_store* s) {
  try {
    delete s;
  } catch (...) {
  }
}

// Creates a Gloo process group over TCP on `store`, or, when `cuda_device` >= 0, an NCCL
// process group on that GPU (its communicator is created here, as
// torch.distributed.init_process_group(device_id=…) does, so that a missing peer or GPU
// shows at once). Gloo binds the interfaces `interfaces` names (comma-separated, as
// GLOO_SOCKET_IFNAME), else the address `address`, else the host name's address
// (PyTorch's default).
char* cnb_group_new(
    cnb_store* s,
    int rank,
    int world,
    double timeout_s,
    const char* interfaces,
    const char* address,
    int cuda_device,
    cnb_group** out) {
  *out = nullptr;
  return guarded("c10d", [&] {
    auto timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000.0));
    c10::intrusive_ptr<c10d::Store> store = s->store;
    c10::intrusive_ptr<c10d::Backend> group;
    if (cuda_device >= 0) {
#ifdef CNNBENCH_NCCL
      // A collective that outlives the timeout throws from wait() (caught below)
      // rather than only being noticed by the watchdog; the user's choice wins.
      setenv("TORCH_NCCL_BLOCKING_WAIT", "1", 0);
      auto device_index = static_cast<c10::DeviceIndex>(cuda_device);
      c10::cuda::set_device(device_index);
      auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
      nccl_options->timeout = timeout;
      auto nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(
          store, rank, world, nccl_options);
      at::Device device(at::kCUDA, device_index);
      nccl->setBoundDeviceId(device);
      nccl->eagerConnectSingleDevice(device);
      group = nccl;
#else
      throw std::runtime_error(
          "c10d's NCCL backend is not compiled into this build (the CUDA and NCCL headers were missing when it was built)");
#endif
    } else {
      auto gloo_options = c10d::ProcessGroupGloo::Options::create(timeout);
      std::string names(interfaces != nullptr ? interfaces : "");
      std::string bind(address != nullptr ? address : "");
      if (!names.empty()) {
        size_t from = 0;
        while (from <= names.size()) {
          size_t comma = names.find(',', from);
          std::string name = names.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
          if (!name.empty()) {
            gloo_options->devices.push_back(
                c10d::ProcessGroupGloo::createDeviceForInterface(name));
          }
          if (comma == std::string::npos) {
            break;
          }
          from = comma + 1;
        }
      } else if (!bind.empty()) {
        gloo_options->devices.push_back(
            c10d::ProcessGroupGloo::createDeviceForHostname(bind));
      } else {
        gloo_options->devices.push_back(
            c10d::ProcessGroupGloo::createDefaultDevice());
      }
      gloo_options->threads = 2;
      group = c10::make_intrusive<c10d::ProcessGroupGloo>(
          store, rank, world, gloo_options);
    }
    *out = new cnb_group{store, group, rank, world, timeout};
  });
}

// Averages `tensors` (gradients) across the ranks in place, in buckets of about
// `bucket_bytes` as DDP's reducer does: each bucket is flattened into one tensor,
// summed by one all-reduce, divided by the world size and copied back. All buckets are
// started before the first is waited for, so Gloo's threads (or NCCL's stream) overlap
// them. With NCCL, wait() makes the current CUDA stream wait for NCCL's, so the
// division and copies are ordered after the sums.
char* cnb_allreduce_mean(
    cnb_group* g,
    at::Tensor** tensors,
    size_t count,
    size_t bucket_bytes) {
  return guarded_on(g, [&] {
    // Consecutive tensors of one dtype, up to `bucket_bytes` each (a larger tensor
    // gets a bucket of its own).
    std::vector<std::vector<at::Tensor>> buckets;
    size_t filled = 0;
    for (size_t i = 0; i < count; ++i) {
      const at::Tensor& t = *tensors[i];
      size_t bytes = t.numel() * t.element_size();
      if (buckets.empty() ||
          buckets.back().front().scalar_type() != t.scalar_type() ||
          filled + bytes > bucket_bytes) {
        buckets.emplace_back();
        filled = 0;
      }
      buckets.back().push_back(t);
      filled += bytes;
    }
    std::vector<at::Tensor> flats;
    std::vector<std::vector<at::Tensor>> inputs;
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    flats.reserve(buckets.size());
    inputs.reserve(buckets.size());
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp::SUM;
    options.timeout = g->timeout;
    for (auto& bucket : buckets) {
      std::vector<at::Tensor> flat_parts;
      for (auto& t : bucket) {
        flat_parts.push_back(t.reshape({-1}));
      }
      flats.push_back(at::cat(flat_parts));
      inputs.push_back({flats.back()});
      works.push_back(issued([&] { return g->group->allreduce(inputs.back(), options); }));
    }
    for (auto& work : works) {
      work->wait(g->timeout);
    }
    for (size_t b = 0; b < buckets.size(); ++b) {
      at::Tensor& flat = flats[b];
      flat.div_(static_cast<double>(g->world));
      int64_t offset = 0;
      for (auto& t : buckets[b]) {
        int64_t n = t.numel();
        t.copy_(flat.narrow(0, offset, n).view(t.sizes()));
        offset += n;
      }
    }
  });
}

// Copies rank `root`'s values of `tensors` into every rank's (weights at the start, as
// DDP does, so every rank trains the same network).
char* cnb_broadcast(cnb_group* g, at::Tensor** tensors, size_t count, int root) {
  return guarded_on(g, [&] {
    c10d::BroadcastOptions options;
    options.rootRank = root;
    options.timeout = g->timeout;
    for (size_t i = 0; i < count; ++i) {
      std::vector<at::Tensor> one{*tensors[i]};
      issued([&] { return g->group->broadcast(one, options); })->wait(g->timeout);
    }
  });
}

char* cnb_barrier(cnb_group* g) {
  return guarded_on(g, [&] {
    c10d::BarrierOptions options;
    options.timeout = g->timeout;
    issued([&] { return g->group->barrier(options); })->wait(g->timeout);
  });
}

// Stores `len` bytes under `key` in the rendezvous store.
char* cnb_store_set(cnb_store* s, const char* key, const uint8_t* data, size_t len) {
  return guarded("c10d", [&] {
    std::vector<uint8_t> value(data, data + len);
    s->store->set(std::string(key), value);
  });
}

// Stores `len` bytes under `key` unless the key is already there (the first writer wins).
char* cnb_store_set_first(cnb_store* s, const char* key, const uint8_t* data, size_t len) {
  return guarded("c10d", [&] {
    std::vector<uint8_t> value(data, data + len);
    s->store->compareSet(std::string(key), {}, value);
  });
}

// Whether `key` is in the store now (no waiting).
char* cnb_store_check(cnb_store* s, const char* key, int* present) {
  *present = 0;
  return guarded("c10d", [&] { *present = s->store->check({std::string(key)}) ? 1 : 0; });
}

// Waits (up to the store's timeout) for `key` and returns its bytes, malloc'd.
char* cnb_store_get(cnb_store* s, const char* key, uint8_t** data, size_t* len) {
  *data = nullptr;
  *len = 0;
  return guarded("c10d", [&] {
    std::vector<uint8_t> value = s->store->get(std::string(key));
    uint8_t* out = static_cast<uint8_t*>(std::malloc(value.size() + 1));
    if (out == nullptr) {
      throw std::bad_alloc();
    }
    std::memcpy(out, value.data(), value.size());
    *data = out;
    *len = value.size();
  });
}

// After a failure seen outside the group (a rank gone from the store), teardown aborts.
void cnb_group_mark_failed(cnb_group* g) {
  g->failed = true;
}

// Tears the group down in the order that lets the process exit cleanly: the process
// group (its Gloo threads and sockets, or NCCL's communicator and watchdog: shutdown(),
// as destroy_process_group() does in 2.11; abort() after a failed collective, which does
// not wait for peers) before the store it was built on.
char* cnb_group_destroy(cnb_group* g) {
  if (g == nullptr) {
    return nullptr;
  }
  char* error = guarded("c10d", [&] {
    if (g->failed) {
      g->group->abort();
    } else {
      g->group->shutdown();
    }
    g->group.reset();
    g->store.reset();
  });
  delete g;
  return error;
}

}  // extern "C"
