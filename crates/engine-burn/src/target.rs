//! The x86-v4 build of burn-flex: burn's `x86-v4` cargo feature (cnnbench-cli's
//! `burn-x86-v4`) compiles gemm's AVX-512 kernels (pulp's x86-64-v4 level: AVX-512
//! F, BW, CD, DQ, VL) beside the AVX2/FMA ones the default build has. gemm picks them at
//! run time when it sees AVX-512F, and then requires the whole x86-64-v4 set: on a CPU
//! without AVX-512 the build silently runs the AVX2 kernels (so a result saying x86-v4
//! would lie), and on one with only part of the set gemm panics mid-run. So the build
//! refuses such CPUs up front, and records itself in the result's `engine.settings`.

/// Whether this build has gemm's AVX-512 kernels.
pub const X86_V4: bool = cfg!(feature = "x86-v4");

/// The `engine.settings` entry that says how burn-flex was built (only in x86-v4 builds;
/// a result without it is the default build).
pub const TARGET_FEATURES_KEY: &str = "target_features";
pub const TARGET_FEATURES_X86_V4: &str = "x86-v4 (gemm's AVX-512 kernels)";

/// The CPU features of x86-64-v4 that gemm's AVX-512 kernels use.
pub const X86_V4_FEATURES: [&str; 5] = ["avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"];

/// Those of [`X86_V4_FEATURES`] this CPU lacks (all of them on a non-x86 CPU).
pub fn missing_x86_v4_features() -> Vec<&'static str> {
    #[cfg(target_arch = "x86_64")]
    let detected = [
        std::arch::is_x86_feature_detected!("avx512f"),
        std::arch::is_x86_feature_detected!("avx512bw"),
        std::arch::is_x86_feature_detected!("avx512cd"),
        std::arch::is_x86_feature_detected!("avx512dq"),
        std::arch::is_x86_feature_detected!("avx512vl"),
    ];
    #[cfg(not(target_arch = "x86_64"))]
    let detected = [false; 5];
    X86_V4_FEATURES
        .iter()
        .zip(detected)
        .filter(|(_, present)| !present)
        .map(|(name, _)| *name)
        .collect()
}

/// Why this build cannot run here, given what the CPU lacks (`None`: it can).
pub fn refusal(x86_v4_build: bool, missing: &[&str]) -> Option<String> {
    if !x86_v4_build || missing.is_empty() {
        return None;
    }
    Some(format!(
        "this build has burn's x86-v4 kernels (AVX-512), but this CPU lacks {}: its gemm would run other kernels than the result records, or stop; use a build without the burn-x86-v4 feature",
        missing.join(", ")
    ))
}

/// Whether burn-flex can run on this CPU in this build, and if not, why.
pub fn availability() -> Result<(), String> {
    match refusal(X86_V4, &missing_x86_v4_features()) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_x86_v4_build_refuses_a_cpu_without_the_whole_set() {
        let why = refusal(true, &["avx512bw", "avx512vl"]).expect("refused");
        assert!(why.contains("lacks avx512bw, avx512vl"), "{why}");
        assert!(why.contains("without the burn-x86-v4 feature"), "{why}");
        assert_eq!(refusal(true, &[]), None);
        // The default build runs anywhere.
        assert_eq!(refusal(false, &X86_V4_FEATURES), None);
    }

    #[test]
    fn results_record_an_x86_v4_build_and_only_that() {
        use cnnbench_engine::Engine;
        let engine = crate::BurnFlexEngine {
            threads: 1,
            capabilities: crate::capabilities(),
            fault: None,
        };
        let settings = engine.info().settings;
        if X86_V4 {
            assert_eq!(settings[TARGET_FEATURES_KEY], TARGET_FEATURES_X86_V4);
        } else {
            assert!(!settings.contains_key(TARGET_FEATURES_KEY), "{settings:?}");
        }
    }

    #[test]
    fn availability_follows_the_build_and_this_cpu() {
        let missing = missing_x86_v4_features();
        assert_eq!(availability().is_ok(), !X86_V4 || missing.is_empty());
    }
}
