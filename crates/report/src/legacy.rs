//! The original `cnn-benchmarks` suite's JSON files: `forward_times`, `backward_times`,
//! `total_times` in seconds, `gpu_name`, `cudnn_version` and the `opt` table.

use crate::record::{EngineDesc, Origin, Record};
use cnnbench_results::Quantity;
use cnnbench_results::{Mode, Precision};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Whether a JSON document looks like a legacy result (so its errors can say so).
pub fn looks_legacy(v: &Value) -> bool {
    v.get("forward_times").is_some() || (v.get("opt").is_some() && v.get("gpu_name").is_some())
}

/// The zoo name for a legacy model label (`resnet-50` → `resnet50`). The original ran
/// the Caffe BVLC AlexNet (grouped convolutions, LRN), which is the zoo's
/// `alexnet-bvlc`, not torchvision's `alexnet`.
pub fn zoo_name(label: &str) -> Option<String> {
    let l = label.to_ascii_lowercase();
    let fixed = match l.as_str() {
        "alexnet" => Some("alexnet-bvlc"),
        "googlenet-v1" | "googlenet" | "inception-v1" => Some("inception-v1"),
        "vgg16" | "vgg-16" => Some("vgg16"),
        "vgg19" | "vgg-19" => Some("vgg19"),
        _ => None,
    };
    if let Some(f) = fixed {
        return Some(f.to_string());
    }
    let depth = l.strip_prefix("resnet-")?;
    if !depth.is_empty() && depth.bytes().all(|b| b.is_ascii_digit()) {
        Some(format!("resnet{depth}"))
    } else {
        None
    }
}

/// cuDNN's integer version code as the original README wrote it: 5105 → `5.1.05`,
/// 4007 → `4.0.07`; codes from cuDNN 9 on (major·10000) → `9.1.00`.
pub fn cudnn_version_string(code: u64) -> String {
    let (major, rest) = if code >= 10_000 {
        (code / 10_000, code % 10_000)
    } else {
        (code / 1000, code % 1000)
    };
    format!("{major}.{}.{:02}", rest / 100, rest % 100)
}

fn times(v: &Value, key: &str) -> Result<Option<Vec<f64>>, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) => {
            let mut out = Vec::with_capacity(a.len());
            for x in a {
                match x.as_f64() {
                    Some(f) => match cnnbench_results::stats::implausible_time(f, true) {
                        None => out.push(f),
                        Some(why) => return Err(format!("`{key}` holds {why}")),
                    },
                    None => return Err(format!("`{key}` holds {x}, not a time in seconds")),
                }
            }
            if out.is_empty() {
                return Err(format!("`{key}` is empty"));
            }
            Ok(Some(out))
        }
        Some(other) => Err(format!("`{key}` is {}, not a list of times", kind(other))),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn usize_field(opt: &Value, key: &str) -> Result<usize, String> {
    opt.get(key)
        .and_then(Value::as_u64)
        .filter(|&n| n > 0)
        .map(|n| n as usize)
        .ok_or_else(|| format!("`opt.{key}` is missing or not a positive integer"))
}

/// Reads one legacy document; the error says what is wrong with it.
pub fn parse(path: &Path, v: &Value) -> Result<Record, String> {
    let forward = times(v, "forward_times")?.ok_or("`forward_times` is missing")?;
    let backward = times(v, "backward_times")?.ok_or("`backward_times` is missing")?;
    if forward.len() != backward.len() {
        return Err(format!(
            "`forward_times` has {} samples but `backward_times` has {}",
            forward.len(),
            backward.len()
        ));
    }
    let total = match times(v, "total_times")? {
        Some(t) if t.len() == forward.len() => t,
        Some(t) => {
            return Err(format!(
                "`total_times` has {} samples but `forward_times` has {}",
                t.len(),
                forward.len()
            ))
        }
        None => forward.iter().zip(&backward).map(|(f, b)| f + b).collect(),
    };
    let gpu_name = v
        .get("gpu_name")
        .and_then(Value::as_str)
        .ok_or("`gpu_name` is missing")?
        .to_string();
    let opt = v
        .get("opt")
        .filter(|o| o.is_object())
        .ok_or("`opt` is missing")?;
    let model_t7 = opt
        .get("model_t7")
        .and_then(Value::as_str)
        .ok_or("`opt.model_t7` is missing")?;
    let batch = usize_field(opt, "batch_size")?;
    let height = usize_field(opt, "image_height")?;
    let width = usize_field(opt, "image_width")?;
    let cudnn = match v.get("cudnn_version") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.eq_ignore_ascii_case("none") => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(code) => Some(cudnn_version_string(code)),
            None => return Err(format!("`cudnn_version` {n} is not a version code")),
        },
        Some(other) => return Err(format!("`cudnn_version` is {}", kind(other))),
    };
    let use_cudnn = opt
        .get("use_cudnn")
        .and_then(Value::as_i64)
        .unwrap_or(cudnn.is_some() as i64)
        != 0;
    let gpu_index = opt.get("gpu").and_then(Value::as_i64).unwrap_or(0);

    let base = model_t7.rsplit(['/', '\\']).next().unwrap_or(model_t7);
    let label = base.strip_suffix(".t7").unwrap_or(base).to_string();
    if label.is_empty() {
        return Err("`opt.model_t7` names no model".into());
    }
    let mut libraries = BTreeMap::new();
    let mut settings = BTreeMap::new();
    if let Some(c) = &cudnn {
        libraries.insert("cudnn".to_string(), c.clone());
    }
    let on = use_cudnn && cudnn.is_some();
    if gpu_index >= 0 {
        settings.insert(
            "cudnn".to_string(),
            if on { "on" } else { "off" }.to_string(),
        );
    }
    let backend = if gpu_index < 0 {
        "nn"
    } else if on {
        "cudnn"
    } else {
        "cunn"
    };
    let mut samples = BTreeMap::new();
    samples.insert(Quantity::Forward, forward);
    samples.insert(Quantity::Backward, backward);
    samples.insert(Quantity::Total, total);
    Ok(Record {
        path: path.to_path_buf(),
        origin: Origin::Legacy,
        model_id: zoo_name(&label).unwrap_or_else(|| label.clone()),
        model_label: label,
        input: [3, height, width],
        batch_size: batch,
        mode: Mode::Train,
        device: if gpu_index < 0 {
            "cpu".into()
        } else {
            format!("cuda:{gpu_index}")
        },
        device_name: gpu_name,
        label: None,
        engine: EngineDesc {
            name: "torch7".into(),
            framework: "torch7".into(),
            framework_version: String::new(),
            backend: backend.into(),
            libraries,
            settings,
            variant: Vec::new(),
            threads_requested: None,
            precision: Precision::F32,
            world_size: 1,
            allocator: None,
        },
        machine: None,
        tool_version: None,
        started_at: None,
        samples,
        params: None,
        macs: None,
        depth: None,
        peak_rss_bytes: None,
        forward_roof_s: None,
        device_peak_bytes: None,
        warnings: Vec::new(),
        disturbed: None,
        cold_start: None,
        hosts: None,
        run_noise_pct: None,
        scenario: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cudnn_codes_become_dotted_versions() {
        assert_eq!(cudnn_version_string(5105), "5.1.05");
        assert_eq!(cudnn_version_string(5110), "5.1.10");
        assert_eq!(cudnn_version_string(4007), "4.0.07");
        assert_eq!(cudnn_version_string(5005), "5.0.05");
        assert_eq!(cudnn_version_string(8005), "8.0.05");
        assert_eq!(cudnn_version_string(90100), "9.1.00");
    }

    #[test]
    fn legacy_names_map_to_the_zoo() {
        assert_eq!(zoo_name("resnet-50").as_deref(), Some("resnet50"));
        assert_eq!(zoo_name("resnet-200").as_deref(), Some("resnet200"));
        assert_eq!(zoo_name("googlenet-v1").as_deref(), Some("inception-v1"));
        assert_eq!(zoo_name("vgg16").as_deref(), Some("vgg16"));
        assert_eq!(zoo_name("alexnet").as_deref(), Some("alexnet-bvlc"));
        assert_eq!(zoo_name("resnet-x"), None);
        assert_eq!(zoo_name("mymodel"), None);
    }

    #[test]
    fn a_legacy_document_is_read() {
        let v: Value = serde_json::from_str(
            r#"{"forward_times":[0.1,0.2],"backward_times":[0.3,0.4],"total_times":[0.4,0.6],
            "gpu_name":"GeForce GTX 1080 Ti","cudnn_version":5110,
            "opt":{"gpu":0,"num_passes":2,"model_t7":"models\/resnets\/resnet-50.t7","batch_size":16,
            "image_height":224,"image_width":224,"use_cudnn":1}}"#,
        )
        .unwrap();
        let r = parse(Path::new("x.json"), &v).unwrap();
        assert_eq!(r.model_label, "resnet-50");
        assert_eq!(r.model_id, "resnet50");
        assert_eq!(r.engine.cudnn_version(), Some("5.1.10"));
        assert_eq!(r.engine.label(), "torch7 cuDNN 5.1.10");
        assert_eq!(r.input, [3, 224, 224]);
        assert_eq!(r.samples[&Quantity::Total], vec![0.4, 0.6]);
    }

    #[test]
    fn none_means_nn_and_missing_fields_are_named() {
        let v: Value = serde_json::from_str(
            r#"{"forward_times":[1.0],"backward_times":[2.0],"gpu_name":"cpu","cudnn_version":"none",
            "opt":{"gpu":-1,"model_t7":"vgg16.t7","batch_size":16,"image_height":224,"image_width":224,"use_cudnn":0}}"#,
        )
        .unwrap();
        let r = parse(Path::new("x.json"), &v).unwrap();
        assert_eq!(r.engine.label(), "torch7 nn");
        assert_eq!(r.samples[&Quantity::Total], vec![3.0]);
        let bad: Value =
            serde_json::from_str(r#"{"forward_times":[1.0],"backward_times":[2.0,1.0]}"#).unwrap();
        assert!(parse(Path::new("x"), &bad)
            .unwrap_err()
            .contains("backward_times"));
        let bad: Value =
            serde_json::from_str(r#"{"forward_times":[1.0],"backward_times":[2.0]}"#).unwrap();
        assert!(parse(Path::new("x"), &bad)
            .unwrap_err()
            .contains("gpu_name"));
    }
}
