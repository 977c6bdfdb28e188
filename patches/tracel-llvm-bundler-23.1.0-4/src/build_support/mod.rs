pub mod archive;
pub mod checksums;
