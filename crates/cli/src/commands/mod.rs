//! One file per subcommand.

pub mod args;
pub mod choose;
pub mod common;
pub mod compare;
pub mod convert;
pub mod convert_onnx;
pub mod distributed;
pub mod engines;
pub mod models;
pub mod noise;
pub mod out;
pub mod peak;
pub mod plan;
pub mod profile;
pub mod report;
pub mod run;
pub mod sweep;
pub mod verify;
