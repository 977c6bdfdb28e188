//! Display names: a TOML file that maps raw device names (as drivers report them) and
//! model names to the names people use, e.g.
//!
//! ```toml
//! [devices]
//! "TITAN X" = "Pascal Titan X"
//! "cpu" = "CPU: Dual Xeon E5-2630 v3"
//!
//! [models]
//! "googlenet-v1" = "Inception-V1"
//! ```

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Raw name → display name, for devices and models.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Aliases {
    #[serde(default)]
    pub devices: BTreeMap<String, String>,
    #[serde(default)]
    pub models: BTreeMap<String, String>,
}

impl Aliases {
    /// Reads an aliases file; the error is one line with the position of the mistake.
    pub fn from_file(path: &Path) -> anyhow::Result<Aliases> {
        // Aliases files are a few lines; the limit only stops a wrong path (a device, a
        // huge file) from being read into memory.
        let text = cnnbench_graph::read_bounded_to_string(path, 16 << 20, "aliases files")
            .map_err(|e| anyhow::anyhow!("aliases file: {e}"))?;
        Self::parse(&text).map_err(|e| anyhow::anyhow!("aliases file {}: {e}", path.display()))
    }

    /// Parses the TOML text of an aliases file.
    pub fn parse(text: &str) -> Result<Aliases, String> {
        toml::from_str::<Aliases>(text).map_err(|e| {
            let line = e.span().map(|s| text[..s.start.min(text.len())].lines().count().max(1));
            let msg = e.message().trim().replace('\n', " ");
            match line {
                Some(l) => format!("line {l}: {msg} (expected [devices] and [models] tables of \"raw name\" = \"display name\")"),
                None => format!("{msg} (expected [devices] and [models] tables of \"raw name\" = \"display name\")"),
            }
        })
    }

    /// The display name of a device.
    pub fn device<'a>(&'a self, raw: &'a str) -> &'a str {
        self.devices
            .get(raw)
            .or_else(|| self.devices.get(raw.trim()))
            .map_or(raw, String::as_str)
    }

    /// The display name of a model, trying its label first, then its zoo name.
    pub fn model(&self, label: &str, id: &str) -> Option<&str> {
        self.models
            .get(label)
            .or_else(|| self.models.get(id))
            .map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_devices_and_models() {
        let a = Aliases::parse(
            "[devices]\n\"TITAN X\" = \"Pascal Titan X\"\n[models]\nvgg16 = \"VGG-16\"\n",
        )
        .unwrap();
        assert_eq!(a.device("TITAN X"), "Pascal Titan X");
        assert_eq!(a.device("other"), "other");
        assert_eq!(a.model("vgg16", "vgg16"), Some("VGG-16"));
    }

    #[test]
    fn mistakes_name_the_line() {
        let e = Aliases::parse("[devices]\n\"a\" = \"b\"\n[gpus]\nx = \"y\"\n").unwrap_err();
        assert!(e.contains("line 3"), "{e}");
        let e = Aliases::parse("[devices]\n\"a\" = 3\n").unwrap_err();
        assert!(e.contains("line 2"), "{e}");
    }
}
