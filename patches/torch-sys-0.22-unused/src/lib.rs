//! Never built: see Cargo.toml. cnnbench binds libtorch through tch 0.24 only.
compile_error!(
    "burn's tch backend is not supported in cnnbench: use the `torch` feature of cnnbench-cli (tch 0.24)"
);
