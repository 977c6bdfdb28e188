// What the libtorch engines need from ATen that tch does not expose: autocast for any
// device and low type (tch's switch is the deprecated CUDA-and-f16 one), GradScaler's
// unscaling of every gradient in one call, and the
// switch of oneDNN's verbose output (torch.backends.mkldnn.verbose), so a run can
// record which kernels oneDNN chose. Nothing throws across the boundary: failures come
// back as a malloc'd message the caller frees with cnb_aten_free.

#include "shim_errors.h"

#include <ATen/core/Tensor.h>
#include <ATen/autocast_mode.h>
#include <ATen/ops/_amp_foreach_non_finite_check_and_unscale.h>
#include <ATen/native/verbose_wrapper.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace at {
// Declared in ATen/native/DispatchStub.h, which pulls in far more than this needs.
TORCH_API std::string get_cpu_capability();
}  // namespace at

namespace {

using cnb::guarded;

// 0: the CPU, 1: CUDA (the only devices the engines run on).
c10::DeviceType device_type(int device) {
  return device == 1 ? c10::DeviceType::CUDA : c10::DeviceType::CPU;
}

}  // namespace

extern "C" {

void cnb_aten_free(char* message) { std::free(message); }

// Enters an autocast region as `torch.autocast(device, dtype)`'s __enter__ does: the
// previous switch and type go to *was_enabled/*was_dtype for cnb_autocast_exit.
// `dtype` is a c10::ScalarType number (tch's Kind::c_int()).
char* cnb_autocast_enter(int device, int dtype, int* was_enabled, int* was_dtype) {
  return guarded("ATen", [&] {
    auto type = device_type(device);
    *was_enabled = at::autocast::is_autocast_enabled(type) ? 1 : 0;
    *was_dtype = static_cast<int>(at::autocast::get_autocast_dtype(type));
    at::autocast::set_autocast_dtype(type, static_cast<c10::ScalarType>(dtype));
    at::autocast::set_autocast_enabled(type, true);
    at::autocast::increment_nesting();
  });
}

// Leaves the region as __exit__ does: the outermost exit empties autocast's cache of
// cast weights, then the previous switch and type come back.
char* cnb_autocast_exit(int device, int was_enabled, int was_dtype) {
  return guarded("ATen", [&] {
    auto type = device_type(device);
    if (at::autocast::decrement_nesting() == 0) {
      at::autocast::clear_cache();
    }
    at::autocast::set_autocast_enabled(type, was_enabled != 0);
    at::autocast::set_autocast_dtype(type, static_cast<c10::ScalarType>(was_dtype));
  });
}

// GradScaler's unscale_: every gradient multiplied by *inv_scale in one foreach call,
// *found_inf set to 1 where any value is not finite. The pointers are tch's tensors
// (at::Tensor*); tch exposes only a one-tensor form of this op.
char* cnb_amp_unscale(at::Tensor** grads, size_t count, at::Tensor* found_inf,
                      at::Tensor* inv_scale) {
  return guarded("ATen", [&] {
    std::vector<at::Tensor> list;
    list.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      list.push_back(*grads[i]);
    }
    at::_amp_foreach_non_finite_check_and_unscale_(list, *found_inf, *inv_scale);
  });
}

// Whether autocast is on for `device`, and in which type (for tests).
char* cnb_autocast_state(int device, int* enabled, int* dtype) {
  return guarded("ATen", [&] {
    auto type = device_type(device);
    *enabled = at::autocast::is_autocast_enabled(type) ? 1 : 0;
    *dtype = static_cast<int>(at::autocast::get_autocast_dtype(type));
  });
}

// oneDNN's verbose level (0 off, 1 every primitive executed), as
// torch.backends.mkldnn.verbose sets it; *accepted is 0 when this oneDNN was built
// without verbose output.
char* cnb_onednn_verbose(int level, int* accepted) {
  return guarded("ATen", [&] { *accepted = torch::verbose::_mkldnn_set_verbose(level) ? 1 : 0; });
}

// The vector instructions ATen's own CPU kernels were dispatched to ("AVX2",
// "AVX512", "DEFAULT"), as torch.backends.cpu.get_cpu_capability() says; free the
// text with cnb_aten_free.
char* cnb_aten_cpu_capability(char** out) {
  return guarded("ATen", [&] { *out = cnb::copy_message(at::get_cpu_capability()); });
}

}  // extern "C"
