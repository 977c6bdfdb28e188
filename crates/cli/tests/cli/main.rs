//! The command line end to end, as a user runs it: one test binary for every file here
//! (a binary per file linked the whole workspace once each, about 25 times, and ran them
//! one after another). Each module is one area of the CLI; `common` holds the helpers.
//! Modules whose engines are cargo features carry their own `#![cfg(feature = …)]`.
//!
//! `.ci/run` runs the modules that need the optional engines by name
//! (`cargo test … --test cli -- cli_torch:: …`).

mod common;

mod cli_again;
mod cli_burn_gpu;
mod cli_candle;
mod cli_choose;
mod cli_convert_weights;
mod cli_distributed;
mod cli_hostile;
mod cli_models;
mod cli_modern;
mod cli_multi_host;
mod cli_noise;
mod cli_onnx_export;
mod cli_openvino;
mod cli_ort;
mod cli_plan;
mod cli_profile;
mod cli_pytorch;
mod cli_run;
mod cli_scenario;
mod cli_sweep;
mod cli_torch;
mod cli_tract;
mod cli_validity;
mod cli_verify;
mod doc_examples;
mod doc_links;
mod fuzz_parsers;
mod report_cli;
