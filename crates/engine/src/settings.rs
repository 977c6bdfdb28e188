//! An engine's own settings: declared by the engine's crate as one typed struct, given
//! everywhere else as text (`--engine-setting KEY=VALUE`, a matrix's
//! `[engine_settings.ENGINE]`, a result's recorded spec).
//!
//! The spec carries the settings every engine shares typed (threads, device, precision,
//! layout); what only some engines have (OpenVINO's hint, `torch.compile`'s mode, ONNX
//! Runtime's graph optimisation) travels as one map of text that only the engine's
//! provider parses, so that a new setting is a field in its engine's crate and nothing
//! in the command line, the spec, the matrix or the report. [`engine_settings!`] writes
//! the parser, the refusal of keys the engine does not take, the documentation that
//! `cnnbench engines` lists and the words a report's label adds.

use std::path::PathBuf;

/// An engine's own settings as given: key → value, in the words of the command line.
pub use cnnbench_results::spec::SettingsMap;

/// One setting an engine declares, as `cnnbench engines` lists it and refusals name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingDoc {
    /// Its key (`hint`, `compile-mode`).
    pub key: &'static str,
    /// Its own flag on the command line (`ov-hint` for `--ov-hint`), where it has one;
    /// every setting can be given as `--engine-setting KEY=VALUE`.
    pub flag: Option<&'static str>,
    /// The values it takes, in words.
    pub values: String,
    /// Its value when not given.
    pub default: String,
    /// What it does.
    pub doc: &'static str,
    /// Whether it is on/off (its flag takes no value).
    pub switch: bool,
    /// Whether its value names a program the engine runs ([`ProgramPath`]): taken from
    /// the command line only, never from a file someone hands the user (a result's spec
    /// for `run --again`, a matrix).
    pub program: bool,
}

/// A struct of an engine's own settings (written by [`engine_settings!`]).
pub trait EngineSettingsRecord: Default + Sized {
    /// Every setting, in the order the struct declares them.
    fn declared() -> Vec<SettingDoc>;
    /// The settings given, each checked; a key this engine does not take, or a value
    /// its setting does not, is refused with what it takes.
    fn parse(given: &SettingsMap) -> Result<Self, String>;
    /// The words a configuration's label adds for settings away from their defaults
    /// (`throughput hint`, `max-autotune`): another configuration, another row.
    fn label(&self) -> Vec<String>;
}

/// A value of a setting, read from and shown as text.
pub trait SettingValue: Sized {
    /// The values it takes, in words.
    fn values() -> String;
    fn parse_setting(text: &str) -> Result<Self, String>;
    fn show(&self) -> String;
    /// Whether it is on/off, given as a flag without a value.
    fn is_switch() -> bool {
        false
    }
    /// Whether it names a program the engine runs.
    fn is_program() -> bool {
        false
    }
}

impl SettingValue for bool {
    fn values() -> String {
        "true or false".into()
    }
    fn parse_setting(text: &str) -> Result<bool, String> {
        match text {
            "true" => Ok(true),
            "false" => Ok(false),
            other => Err(format!(
                "\"{}\" is not true or false",
                cnnbench_results::printable(other)
            )),
        }
    }
    fn show(&self) -> String {
        self.to_string()
    }
    fn is_switch() -> bool {
        true
    }
}

/// A count of at least 1 (streams, threads of a pool).
impl SettingValue for usize {
    fn values() -> String {
        "a whole number, at least 1".into()
    }
    fn parse_setting(text: &str) -> Result<usize, String> {
        text.trim()
            .parse::<usize>()
            .ok()
            .filter(|&n| (1..=1 << 20).contains(&n))
            .ok_or_else(|| {
                format!(
                    "\"{}\" is not a whole number from 1 to {}",
                    cnnbench_results::printable(text),
                    1 << 20
                )
            })
    }
    fn show(&self) -> String {
        self.to_string()
    }
}

impl SettingValue for PathBuf {
    fn values() -> String {
        "a path".into()
    }
    fn parse_setting(text: &str) -> Result<PathBuf, String> {
        if text.is_empty() {
            return Err("an empty path".into());
        }
        Ok(PathBuf::from(text))
    }
    fn show(&self) -> String {
        self.display().to_string()
    }
}

/// The path of a program the engine starts (the pytorch engines' Python): a setting of
/// this type is taken from the command line only, since a file a user is handed (a
/// result, a matrix) is data and must never name a program cnnbench then runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramPath(pub PathBuf);

impl SettingValue for ProgramPath {
    fn values() -> String {
        "the path of a program".into()
    }
    fn parse_setting(text: &str) -> Result<ProgramPath, String> {
        PathBuf::parse_setting(text).map(ProgramPath)
    }
    fn show(&self) -> String {
        self.0.show()
    }
    fn is_program() -> bool {
        true
    }
}

/// A setting that may be left to the engine (`None`: its own choice).
impl<T: SettingValue> SettingValue for Option<T> {
    fn values() -> String {
        T::values()
    }
    fn parse_setting(text: &str) -> Result<Option<T>, String> {
        T::parse_setting(text).map(Some)
    }
    fn show(&self) -> String {
        match self {
            Some(v) => v.show(),
            None => "the engine's own choice".into(),
        }
    }
    fn is_switch() -> bool {
        T::is_switch()
    }
    fn is_program() -> bool {
        T::is_program()
    }
}

/// The keys of `given` that `declared` does not have, refused with those it has.
pub fn refuse_unknown(given: &SettingsMap, declared: &[SettingDoc]) -> Result<(), String> {
    for key in given.keys() {
        if !declared.iter().any(|d| d.key == key) {
            let takes: Vec<&str> = declared.iter().map(|d| d.key).collect();
            return Err(if takes.is_empty() {
                format!(
                    "it has no setting `{}`: it has no settings of its own",
                    cnnbench_results::printable(key)
                )
            } else {
                format!(
                    "it has no setting `{}`: its settings are {}",
                    cnnbench_results::printable(key),
                    takes.join(", ")
                )
            });
        }
    }
    Ok(())
}

/// A setting whose value is one of a few words: an enum with its words, for
/// [`engine_settings!`].
///
/// ```
/// cnnbench_engine::setting_choices! {
///     /// How requests run.
///     pub enum Hint { Latency = "latency", Throughput = "throughput" }
/// }
/// use cnnbench_engine::settings::SettingValue;
/// assert_eq!(Hint::parse_setting("throughput"), Ok(Hint::Throughput));
/// assert!(Hint::parse_setting("fast").unwrap_err().contains("latency or throughput"));
/// ```
#[macro_export]
macro_rules! setting_choices {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident { $first:ident = $first_word:literal $(, $variant:ident = $word:literal)* $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        $vis enum $name {
            #[default]
            $first,
            $($variant,)*
        }

        impl $name {
            /// Every value, the default first.
            pub const ALL: &'static [$name] = &[$name::$first $(, $name::$variant)*];

            /// The word for it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $name::$first => $first_word,
                    $($name::$variant => $word,)*
                }
            }
        }

        impl $crate::settings::SettingValue for $name {
            fn values() -> String {
                let words: Vec<&str> = $name::ALL.iter().map(|v| v.as_str()).collect();
                match words.split_last() {
                    Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
                    _ => words.join(""),
                }
            }
            fn parse_setting(text: &str) -> Result<Self, String> {
                $name::ALL
                    .iter()
                    .copied()
                    .find(|v| v.as_str() == text)
                    .ok_or_else(|| format!(
                        "\"{}\" is not one of its values: {}",
                        $crate::printable(text),
                        <$name as $crate::settings::SettingValue>::values()
                    ))
            }
            fn show(&self) -> String {
                self.as_str().to_string()
            }
        }
    };
}

/// An engine's own settings as one typed struct: each field with its key, its doc, its
/// default and, where a value away from the default is another configuration, the words
/// a report's label adds. Writes the struct, its `Default` and its
/// [`EngineSettingsRecord`].
///
/// ```
/// cnnbench_engine::engine_settings! {
///     /// A demo engine's settings.
///     pub struct DemoSettings {
///         /// CPU streams.
///         #[setting(key = "streams", label = |n: &Option<usize>| n.map(|n| format!("{n} streams")))]
///         pub streams: Option<usize> = None,
///         /// Fold weights.
///         #[setting(key = "fold", flag = "fold")]
///         pub fold: bool = false,
///     }
/// }
/// use cnnbench_engine::settings::EngineSettingsRecord;
/// let given = [("streams".to_string(), "4".to_string())].into_iter().collect();
/// let s = DemoSettings::parse(&given).unwrap();
/// assert_eq!(s.streams, Some(4));
/// assert_eq!(s.label(), vec!["4 streams".to_string()]);
/// let wrong = [("stream".to_string(), "4".to_string())].into_iter().collect();
/// assert!(DemoSettings::parse(&wrong).unwrap_err().contains("its settings are streams, fold"));
/// ```
#[macro_export]
macro_rules! engine_settings {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[doc = $doc:literal])+
                #[setting(key = $key:literal $(, flag = $flag:literal)? $(, label = $label:expr)?)]
                $fvis:vis $field:ident : $ty:ty = $default:expr,
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq)]
        $vis struct $name {
            $( $(#[doc = $doc])+ $fvis $field: $ty, )*
        }

        impl Default for $name {
            fn default() -> Self {
                $name { $($field: $default,)* }
            }
        }

        impl $crate::settings::EngineSettingsRecord for $name {
            fn declared() -> Vec<$crate::settings::SettingDoc> {
                vec![$(
                    $crate::settings::SettingDoc {
                        key: $key,
                        flag: $crate::engine_settings!(@flag $($flag)?),
                        values: <$ty as $crate::settings::SettingValue>::values(),
                        default: $crate::settings::SettingValue::show(&{ let d: $ty = $default; d }),
                        doc: concat!($($doc),+).trim_ascii(),
                        switch: <$ty as $crate::settings::SettingValue>::is_switch(),
                        program: <$ty as $crate::settings::SettingValue>::is_program(),
                    },
                )*]
            }

            fn parse(given: &$crate::settings::SettingsMap) -> Result<Self, String> {
                $crate::settings::refuse_unknown(given, &Self::declared())?;
                #[allow(unused_mut)]
                let mut settings = $name::default();
                $(
                    if let Some(text) = given.get($key) {
                        settings.$field = <$ty as $crate::settings::SettingValue>::parse_setting(text)
                            .map_err(|e| format!("setting `{}`: {e}", $key))?;
                    }
                )*
                Ok(settings)
            }

            fn label(&self) -> Vec<String> {
                #[allow(unused_mut)]
                let mut words: Vec<String> = Vec::new();
                $($(
                    if let Some(w) = ($label)(&self.$field) {
                        words.push(w);
                    }
                )?)*
                words
            }
        }
    };
    (@flag $flag:literal) => { Some($flag) };
    (@flag) => { None };
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::setting_choices! {
        /// A test hint.
        pub enum Hint { Latency = "latency", Throughput = "throughput" }
    }

    crate::engine_settings! {
        /// A test engine's settings.
        pub struct TestSettings {
            /// How requests run.
            #[setting(key = "hint", flag = "test-hint", label = |h: &Hint| (*h == Hint::Throughput).then(|| "throughput hint".to_string()))]
            pub hint: Hint = Hint::Latency,
            /// CPU streams.
            #[setting(key = "streams")]
            pub streams: Option<usize> = None,
            /// Fold.
            #[setting(key = "fold", label = |f: &bool| f.then(|| "fold".to_string()))]
            pub fold: bool = false,
        }
    }

    fn map(pairs: &[(&str, &str)]) -> SettingsMap {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn given_settings_are_parsed_into_the_struct_and_labelled() {
        let s = TestSettings::parse(&map(&[
            ("hint", "throughput"),
            ("streams", "4"),
            ("fold", "true"),
        ]))
        .unwrap();
        assert_eq!(
            s,
            TestSettings {
                hint: Hint::Throughput,
                streams: Some(4),
                fold: true
            }
        );
        assert_eq!(s.label(), vec!["throughput hint", "fold"]);
        assert_eq!(
            TestSettings::parse(&SettingsMap::new()).unwrap(),
            TestSettings::default()
        );
        assert!(TestSettings::default().label().is_empty());
    }

    #[test]
    fn unknown_keys_and_wrong_values_are_refused_with_what_is_taken() {
        let e = TestSettings::parse(&map(&[("hnit", "latency")])).unwrap_err();
        assert_eq!(
            e,
            "it has no setting `hnit`: its settings are hint, streams, fold"
        );
        let e = TestSettings::parse(&map(&[("hint", "fast")])).unwrap_err();
        assert_eq!(
            e,
            "setting `hint`: \"fast\" is not one of its values: latency or throughput"
        );
        let e = TestSettings::parse(&map(&[("streams", "0")])).unwrap_err();
        assert!(
            e.starts_with("setting `streams`: \"0\" is not a whole number"),
            "{e}"
        );
        let e = TestSettings::parse(&map(&[("fold", "on")])).unwrap_err();
        assert!(e.contains("not true or false"), "{e}");
        // A control character given is shown escaped.
        let e = refuse_unknown(&map(&[("a\u{1b}[2J", "1")]), &[]).unwrap_err();
        assert!(
            !e.contains('\u{1b}') && e.contains("no settings of its own"),
            "{e}"
        );
    }

    #[test]
    fn the_declarations_say_key_flag_values_default_and_doc() {
        let d = TestSettings::declared();
        assert_eq!(d.len(), 3);
        assert_eq!(d[0].key, "hint");
        assert_eq!(d[0].flag, Some("test-hint"));
        assert_eq!(d[0].values, "latency or throughput");
        assert_eq!(d[0].default, "latency");
        assert_eq!(d[0].doc, "How requests run.");
        assert!(!d[0].switch);
        assert_eq!(d[1].default, "the engine's own choice");
        assert!(d[2].switch);
        assert_eq!(d[2].flag, None);
    }
}
