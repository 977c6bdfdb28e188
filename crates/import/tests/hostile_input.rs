//! Hostile input must not crash or hang the importers: truncated, bit-flipped and random
//! text fed to the prototxt parser and the Caffe converter, and to model-JSON loading.

use cnnbench_graph::Graph;
use cnnbench_import::caffe::from_prototxt;
use proptest::prelude::*;

const FIXTURE: &str = include_str!("fixtures/tiny.prototxt");

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn truncated_prototxt_never_panics(cut in 0usize..FIXTURE.len()) {
        let mut end = cut;
        while !FIXTURE.is_char_boundary(end) { end -= 1; }
        let _ = from_prototxt(&FIXTURE[..end]);
    }

    #[test]
    fn bit_flipped_prototxt_never_panics(flips in proptest::collection::vec((0usize..FIXTURE.len(), 0u8..8), 1..8)) {
        let mut bytes = FIXTURE.as_bytes().to_vec();
        for (at, bit) in flips {
            bytes[at] ^= 1 << bit;
        }
        let text = String::from_utf8_lossy(&bytes);
        let _ = from_prototxt(&text);
    }

    #[test]
    fn random_text_never_panics(text in "[a-z_{}<>:;\"'# \\n0-9.-]{0,400}") {
        let _ = from_prototxt(&text);
    }

    #[test]
    fn mutated_model_json_never_panics(flips in proptest::collection::vec((0usize..4000, 0u8..8), 1..6), cut in 0usize..4000) {
        let json = from_prototxt(FIXTURE).unwrap().to_json();
        let mut bytes = json.into_bytes();
        for (at, bit) in flips {
            let at = at % bytes.len();
            bytes[at] ^= 1 << bit;
        }
        bytes.truncate(cut.max(1).min(bytes.len()));
        let _ = Graph::from_json(&String::from_utf8_lossy(&bytes));
    }
}

const ONNX_FIXTURE: &[u8] = include_bytes!("fixtures/onnx/everyop.torchscript.onnx");

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn truncated_onnx_never_panics(cut in 0usize..ONNX_FIXTURE.len()) {
        let _ = cnnbench_import::onnx::from_onnx(&ONNX_FIXTURE[..cut], "t");
    }

    #[test]
    fn bit_flipped_onnx_never_panics(flips in proptest::collection::vec((0usize..ONNX_FIXTURE.len(), 0u8..8), 1..8)) {
        let mut bytes = ONNX_FIXTURE.to_vec();
        for (at, bit) in flips {
            bytes[at] ^= 1 << bit;
        }
        let _ = cnnbench_import::onnx::from_onnx(&bytes, "t");
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = cnnbench_import::onnx::from_onnx(&bytes, "t");
    }
}
