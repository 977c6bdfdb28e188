//! ONNX Runtime (ort-cpu) as the command line's registry sees it, built in or not.

use cnnbench_engine::provider::{ConcurrentServing, DeclaredSettings, EngineOptions, Provider};
use cnnbench_engine::settings::EngineSettingsRecord;
use cnnbench_engine::{Capabilities, Engine};

cnnbench_engine::setting_choices! {
    /// ONNX Runtime's graph optimisation level (`GraphOptimizationLevel`): `all` is its
    /// default in Python, so the default times what a Python user gets.
    pub enum GraphOptimization {
        All = "all",
        Extended = "extended",
        Basic = "basic",
        Disabled = "disabled",
    }
}

impl GraphOptimization {
    /// The name ONNX Runtime's C and Python APIs give it.
    pub fn onnxruntime_name(self) -> &'static str {
        match self {
            GraphOptimization::All => "ORT_ENABLE_ALL",
            GraphOptimization::Extended => "ORT_ENABLE_EXTENDED",
            GraphOptimization::Basic => "ORT_ENABLE_BASIC",
            GraphOptimization::Disabled => "ORT_DISABLE_ALL",
        }
    }
}

cnnbench_engine::setting_choices! {
    /// How ONNX Runtime multiplies int8 activations by int8 weights on x86. Its fast
    /// kernels (u8 activations × s8 weights) add each pair of neighbouring products with
    /// `VPMADDUBSW`, in saturating 16-bit arithmetic: 255 × 127 × 2 = 64,770 is clamped to
    /// 32,767 on a CPU without VNNI (AVX2, AVX-512 without VNNI), where only its slower
    /// u8 × u8 kernels (`session.x64quantprecision`) compute the exact product. With VNNI
    /// (or AMX) the fast kernels sum in 32 bits and are exact.
    pub enum Int8Products {
        Auto = "auto",
        Exact = "exact",
        Fast = "fast",
    }
}

impl Int8Products {
    /// Whether a session asks ONNX Runtime for its exact u8 × u8 kernels on a CPU that
    /// has VNNI (`vnni`) or not: `auto` does where the fast ones would saturate.
    pub fn exact_kernels(self, vnni: bool) -> bool {
        match self {
            Int8Products::Auto => !vnni,
            Int8Products::Exact => true,
            Int8Products::Fast => false,
        }
    }
}

/// Whether this CPU sums int8 products in 32 bits (AVX-512 VNNI or AVX-VNNI), so that
/// ONNX Runtime's fast u8 × s8 kernels cannot saturate. Not x86: its kernels there
/// have no 16-bit pair sums, and the exact-products option does nothing.
pub fn cpu_has_vnni() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512vnni")
            || std::arch::is_x86_feature_detected!("avxvnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        true
    }
}

cnnbench_engine::engine_settings! {
    /// ort-cpu's own settings.
    pub struct OrtSettings {
        /// The graph rewrites ONNX Runtime makes before running: `all` (its default:
        /// node fusions and the CPU's blocked NCHWc layout), `extended` (fusions
        /// without the layout), `basic` (constant folding, redundant nodes, Conv+BN),
        /// `disabled` (the exported graph as it is).
        #[setting(key = "graph-optimization", label = |g: &GraphOptimization| (*g != GraphOptimization::All).then(|| format!("graph optimization {}", g.as_str())))]
        pub graph_optimization: GraphOptimization = GraphOptimization::All,
        /// int8's matrix products on x86: `auto` (exact where the CPU has no VNNI,
        /// ONNX Runtime's fast kernels where it has), `exact` (its u8 × u8 kernels,
        /// `session.x64quantprecision`), `fast` (its u8 × s8 kernels, whose 16-bit
        /// pair sums saturate on a CPU without VNNI: the answer drifts from f32's).
        #[setting(key = "int8-products", label = |p: &Int8Products| (*p != Int8Products::Auto).then(|| format!("int8 products {}", p.as_str())))]
        pub int8_products: Int8Products = Int8Products::Auto,
    }
}

struct Ort;

impl Provider for Ort {
    fn name(&self) -> &'static str {
        crate::ENGINE_NAME
    }
    fn description(&self) -> &'static str {
        "ONNX Runtime's CPU provider (PyPI wheel, loaded at run time) on cnnbench's ONNX export"
    }
    fn capabilities(&self) -> Capabilities {
        crate::capabilities()
    }
    /// Each session has its own threads.
    fn concurrent_serving(&self) -> ConcurrentServing {
        ConcurrentServing::SessionsSplitTheThreads
    }
    fn availability(&self, _: &EngineOptions) -> Result<(), String> {
        crate::availability()
    }
    fn settings(&self) -> DeclaredSettings {
        DeclaredSettings::of::<OrtSettings>()
    }
    fn create(&self, options: &EngineOptions) -> anyhow::Result<Box<dyn Engine>> {
        let settings = OrtSettings::parse(&options.settings)
            .map_err(|e| anyhow::anyhow!("{}: {e}", crate::ENGINE_NAME))?;
        #[cfg(feature = "ort")]
        {
            Ok(Box::new(crate::engine(options.threads, settings)?))
        }
        #[cfg(not(feature = "ort"))]
        {
            let _ = (options, settings);
            Err(anyhow::anyhow!(
                cnnbench_engine::provider::not_in_this_build(crate::SETUP_HINT)
            ))
        }
    }
}

/// This crate's engines.
pub fn providers() -> Vec<Box<dyn Provider>> {
    vec![Box::new(Ort)]
}
