pub mod build_support;
pub mod config;
pub mod llvm_sys;
pub mod utils;
