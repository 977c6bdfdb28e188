//! What OpenVINO ran of a network, layer by layer: a second compilation, untimed, with
//! per-layer profiling on (`PERF_COUNT`), runs one inference and reads OpenVINO's
//! profiling records, whose execution type names each layer's kernel and the precision
//! it ran in (`brgconv_avx512_I8`, `brgemm_avx512_bf16`, `gemm_mlas_f32`). That is how a
//! low-precision result says whether it ran as asked.
//!
//! The `openvino` crate keeps its handles private and has no call for the records, so
//! this module drives OpenVINO's C API (`openvino-sys`, already loaded by the engine)
//! directly; every handle it makes is freed by a guard.

use crate::ENGINE_NAME;
use anyhow::{anyhow, Result};
use cnnbench_engine::coverage::KernelCoverage;
use cnnbench_engine::Precision;
use cnnbench_graph::Graph;
use openvino_sys as ov;
use std::ffi::{c_char, CStr, CString};
use std::ptr;

/// One layer OpenVINO executed, as its profiling records name it.
#[derive(Clone, Debug, PartialEq)]
pub struct ExecutedLayer {
    /// The executed node's name: the network's layer name, with a suffix after `/` when
    /// OpenVINO split it (`conv1/WithoutBiases`), or a name of OpenVINO's own when it
    /// renamed a fused layer (`Multiply_18005`).
    pub name: String,
    /// OpenVINO's kind of layer (`Convolution`, `FullyConnected`, `Reorder`, …).
    pub node_type: String,
    /// The kernel, ending in the precision it ran in (`brgconv_avx512_1x1_I8`).
    pub exec_type: String,
}

/// The precision a kernel ran in, read from the end of OpenVINO's execution type;
/// `None` when it names none (`undef`, `unknown`).
pub fn kernel_precision(exec_type: &str) -> Option<Precision> {
    let suffix = exec_type.rsplit('_').next()?.to_ascii_lowercase();
    match suffix.as_str() {
        "i8" | "u8" => Some(Precision::Int8),
        "bf16" => Some(Precision::Bf16),
        "f16" | "fp16" => Some(Precision::F16),
        "f32" | "fp32" => Some(Precision::F32),
        _ => None,
    }
}

/// Whether OpenVINO's kind of layer is a convolution or a matrix product, the layers a
/// low precision is asked for (OpenVINO names its int8 fully connected layers
/// `FullyConnectedQuantizedLegacy` and the like).
fn is_heavy(node_type: &str) -> bool {
    [
        "Convolution",
        "GroupConvolution",
        "Deconvolution",
        "FullyConnected",
        "MatMul",
    ]
    .iter()
    .any(|kind| node_type.starts_with(kind))
}

/// The coverage of `asked` among the heavy layers OpenVINO executed: each matched to
/// the network by its name before any `/`.
pub fn coverage_of(graph: &Graph, layers: &[ExecutedLayer], asked: Precision) -> KernelCoverage {
    let mut coverage = KernelCoverage::new(asked);
    for layer in layers.iter().filter(|l| is_heavy(&l.node_type)) {
        let layer_name = layer.name.split('/').next().unwrap_or(&layer.name);
        let as_asked = kernel_precision(&layer.exec_type) == Some(asked);
        coverage.add(graph, &layer.exec_type, layer_name, as_asked);
    }
    coverage
}

/// Compiles the ONNX `bytes` for the CPU with `properties` (the timed compilation's,
/// with profiling added) at `input_shape`, runs one inference on zeros, and returns the
/// layers OpenVINO executed.
pub fn executed_layers(
    bytes: &[u8],
    properties: &[(String, String)],
    input_shape: [i64; 4],
) -> Result<Vec<ExecutedLayer>> {
    let cpu = CString::new("CPU")?;
    // SAFETY: every call is OpenVINO's C API on handles this function made and has not
    // freed (each guard frees its handle once, after the handles made from it); strings
    // passed are NUL-terminated and outlive the calls; the records are copied out
    // before their list is freed.
    unsafe {
        let mut core = ptr::null_mut();
        check(ov::ov_core_create(&mut core), "to start")?;
        let core = Guard(core, ov::ov_core_free);
        for (key, value) in properties
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain([("PERF_COUNT", "YES")])
        {
            let (key_c, value_c) = (CString::new(key)?, CString::new(value)?);
            check(
                ov::ov_core_set_property(core.0, cpu.as_ptr(), key_c.as_ptr(), value_c.as_ptr()),
                &format!("{key}={value}"),
            )?;
        }
        let mut model = ptr::null_mut();
        check(
            ov::ov_core_read_model_from_memory_buffer(
                core.0,
                bytes.as_ptr().cast::<c_char>(),
                bytes.len(),
                ptr::null(),
                &mut model,
            ),
            "the ONNX export",
        )?;
        let model = Guard(model, ov::ov_model_free);
        let mut shape = std::mem::zeroed::<ov::ov_partial_shape_t>();
        check(
            ov::ov_partial_shape_create_static(4, input_shape.as_ptr(), &mut shape),
            "the input shape",
        )?;
        let reshaped = ov::ov_model_reshape_single_input(model.0, shape);
        ov::ov_partial_shape_free(&mut shape);
        check(reshaped, "the batch")?;
        let mut compiled = ptr::null_mut();
        check(
            ov::ov_core_compile_model(core.0, model.0, cpu.as_ptr(), 0, &mut compiled),
            "to compile with profiling",
        )?;
        let compiled = Guard(compiled, ov::ov_compiled_model_free);
        let mut request = ptr::null_mut();
        check(
            ov::ov_compiled_model_create_infer_request(compiled.0, &mut request),
            "an infer request",
        )?;
        let request = Guard(request, ov::ov_infer_request_free);
        let mut input = ptr::null_mut();
        check(
            ov::ov_infer_request_get_input_tensor(request.0, &mut input),
            "the input tensor",
        )?;
        let input = Guard(input, ov::ov_tensor_free);
        let (mut data, mut size) = (ptr::null_mut(), 0usize);
        check(ov::ov_tensor_data(input.0, &mut data), "the input's data")?;
        check(
            ov::ov_tensor_get_byte_size(input.0, &mut size),
            "the input's size",
        )?;
        if !data.is_null() {
            ptr::write_bytes(data.cast::<u8>(), 0, size);
        }
        check(
            ov::ov_infer_request_infer(request.0),
            "the profiled inference",
        )?;
        let mut records = ov::ov_profiling_info_list_t {
            profiling_infos: ptr::null_mut(),
            size: 0,
        };
        check(
            ov::ov_infer_request_get_profiling_info(request.0, &mut records),
            "its profiling records",
        )?;
        let mut layers = Vec::with_capacity(records.size);
        if !records.profiling_infos.is_null() {
            for record in std::slice::from_raw_parts(records.profiling_infos, records.size) {
                if record.status != ov::ov_profiling_info_t_Status::EXECUTED {
                    continue;
                }
                layers.push(ExecutedLayer {
                    name: text(record.node_name),
                    node_type: text(record.node_type),
                    exec_type: text(record.exec_type),
                });
            }
        }
        ov::ov_profiling_info_list_free(&mut records);
        Ok(layers)
    }
}

/// Frees an OpenVINO handle when dropped.
struct Guard<T>(*mut T, unsafe fn(*mut T));

impl<T> Drop for Guard<T> {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: the handle was made by OpenVINO and is freed once, here.
            unsafe { (self.1)(self.0) }
        }
    }
}

/// An error naming what OpenVINO refused, with its own message.
fn check(status: ov::ov_status_e, what: &str) -> Result<()> {
    if status == ov::ov_status_e::OK {
        return Ok(());
    }
    // SAFETY: OpenVINO's last error message is a NUL-terminated string it owns.
    let message = unsafe { text(ov::ov_get_last_err_msg()) };
    Err(anyhow!(
        "{ENGINE_NAME}: OpenVINO's profiling pass refused {what} ({status:?}): {message}"
    ))
}

/// A C string of OpenVINO's, copied; empty for a null pointer.
///
/// # Safety
/// `text` is null or a NUL-terminated string that lives through the call.
unsafe fn text(text: *const c_char) -> String {
    if text.is_null() {
        return String::new();
    }
    CStr::from_ptr(text).to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cnnbench_graph::ops::Conv2d;
    use cnnbench_graph::GraphBuilder;

    #[test]
    fn the_precision_is_read_from_the_end_of_the_execution_type() {
        for (exec_type, precision) in [
            ("brgconv_avx512_1x1_I8", Some(Precision::Int8)),
            ("jit_uni_U8", Some(Precision::Int8)),
            ("brgemm_avx512_bf16", Some(Precision::Bf16)),
            ("jit_avx512_FP16", Some(Precision::F16)),
            ("gemm_mlas_f32", Some(Precision::F32)),
            ("undef", None),
            ("", None),
        ] {
            assert_eq!(kernel_precision(exec_type), precision, "{exec_type}");
        }
    }

    fn layer(name: &str, node_type: &str, exec_type: &str) -> ExecutedLayer {
        ExecutedLayer {
            name: name.into(),
            node_type: node_type.into(),
            exec_type: exec_type.into(),
        }
    }

    /// OpenVINO's records as 2026.4.1 writes them for an int8 network, one convolution
    /// forced back to f32: the heavy layers are found under OpenVINO's own kinds, matched
    /// to the network through the `/` suffixes, and the f32 one named.
    #[test]
    fn a_layer_openvino_left_in_f32_is_caught_and_named() {
        let mut b = GraphBuilder::new("two", [3, 8, 8]);
        let x = b.input();
        let c1 = b.conv("conv1", &x, Conv2d::new(4, 3).padding(1));
        let c2 = b.conv("conv2", &c1, Conv2d::new(64, 3).padding(1));
        let f = b.flatten("flat", &c2);
        let l = b.linear("fc", &f, 10);
        let graph = b.finish(&l).unwrap();
        let records = [
            layer("input/quantized", "Subgraph", "jit_avx512_f32"),
            layer("conv1/WithoutBiases", "Convolution", "brgconv_avx512_I8"),
            layer("conv2/WithoutBiases", "Convolution", "brgconv_avx512_f32"),
            layer(
                "fc/WithoutBiases/DequantizationMultiply",
                "FullyConnectedQuantizedLegacy",
                "brgemm_avx512_I8",
            ),
        ];
        let coverage = coverage_of(&graph, &records, Precision::Int8);
        assert_eq!(coverage.unmatched, 0);
        let chosen = coverage.chosen_kernels("OpenVINO");
        assert_eq!(
            chosen.settings["int8_kernels"],
            "brgconv_avx512_I8 ×1, brgconv_avx512_f32 ×1, brgemm_avx512_I8 ×1"
        );
        assert!(
            chosen.warnings[0].contains("not run as asked")
                && chosen.warnings[0].ends_with("in another precision: conv2"),
            "{:?}",
            chosen.warnings
        );
        let all_int8: Vec<ExecutedLayer> = records
            .iter()
            .map(|l| layer(&l.name, &l.node_type, &l.exec_type.replace("_f32", "_I8")))
            .collect();
        let chosen = coverage_of(&graph, &all_int8, Precision::Int8).chosen_kernels("OpenVINO");
        assert_eq!(chosen.settings["int8_mac_share"], "100.0%");
        assert!(chosen.warnings.is_empty(), "{:?}", chosen.warnings);
    }
}
