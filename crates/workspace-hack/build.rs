//! Empty: its presence makes cargo build the build-dependencies, whose features then
//! unify with those of the other build scripts and proc-macros (see Cargo.toml).
fn main() {}
