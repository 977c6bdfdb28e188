//! No code: this crate only turns on dependency features (see its Cargo.toml for why).
