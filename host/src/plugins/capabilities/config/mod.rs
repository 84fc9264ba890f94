//! The `config` capability: the settings a plugin reads. Secrets are never settings (the host
//! adds keys to HTTP requests itself, [`crate::plugins::services`]). Three kinds, all decided by
//! [`grant`]:
//!
//! - host settings a manifest asks for by name in `grants.config` (the web search engine, the
//!   agent model, the title model, the interpreter's limits): [`HOST_SETTINGS`];
//! - the base URLs of the plugin's services, which [`crate::egress::reach::Reach`] adds;
//! - the settings the plugin declares in its manifest (`settings`), with the operator's values
//!   from `[plugins.ID.settings]` (`ID` being the id it runs under) or their declared defaults.
//!   A value of the wrong type refuses the plugin, naming both; a value for a setting it does not
//!   declare is not readable, and the log says so.
//!
//! - [`host`]: the WIT `config` interface, which answers from the grant only.

pub mod host;

use std::collections::BTreeMap;

use crate::config::file::SettingValue;
use crate::plugins::manifest::{Manifest, SettingSpec, SettingType};

/// The host settings a plugin may ask to read (`grants.config`).
pub const HOST_SETTINGS: &[&str] = &[
    "chat_web_search_engine",
    "agent_model",
    "title_model",
    // The interpreter's limits (`config/python.rs`), which its description states.
    "python_timeout_ms",
    "python_memory_mib",
    "python_idle_minutes",
    "python_output_chars",
    "python_max_file_mib",
    "python_max_files_per_call",
];

/// A plugin's readable settings, and what the log should say about the operator's values.
pub struct SettingsGrant {
    pub values: BTreeMap<String, String>,
    /// Operator values the plugin does not declare (not readable).
    pub ignored: Vec<String>,
}

/// Decides what the plugin of `manifest`, running as `id`, reads: `from_services` (its services'
/// base URLs), the host settings it asks for (`host`: their values, when set), and its declared
/// settings with `operator`'s values (`[plugins.ID.settings]`).
pub fn grant(
    manifest: &Manifest,
    id: &str,
    from_services: BTreeMap<String, String>,
    host: &BTreeMap<&'static str, String>,
    operator: Option<&BTreeMap<String, SettingValue>>,
) -> Result<SettingsGrant, String> {
    let mut values = from_services;
    for key in &manifest.grants.config {
        if !HOST_SETTINGS.contains(&key.as_str()) {
            return Err(format!(
                "grants.config: {key:?} is not a setting plugins may read; known: {}",
                HOST_SETTINGS.join(", ")
            ));
        }
        if let Some(value) = host.get(key.as_str()) {
            values.insert(key.clone(), value.clone());
        }
    }
    let empty = BTreeMap::new();
    let operator = operator.unwrap_or(&empty);
    for spec in &manifest.settings {
        let value = match operator.get(&spec.name) {
            Some(given) => Some(typed(spec, id, given)?),
            None => spec.default.as_ref().map(render_default),
        };
        if let Some(value) = value {
            values.insert(spec.name.clone(), value);
        }
    }
    let ignored = operator
        .keys()
        .filter(|name| !manifest.settings.iter().any(|s| &s.name == *name))
        .map(|name| {
            format!("plugins.{id}.settings.{name}: {id} declares no such setting; not readable")
        })
        .collect();
    Ok(SettingsGrant { values, ignored })
}

/// Whether the operator's values for the plugin running as `id` fit the types it declares: a
/// configuration file that gives a loaded plugin a wrong type is refused before anything is
/// relinked (the same rule [`grant`] applies to a plugin arriving later).
pub fn check(
    manifest: &Manifest,
    id: &str,
    operator: Option<&BTreeMap<String, SettingValue>>,
) -> Result<(), String> {
    let Some(operator) = operator else {
        return Ok(());
    };
    for spec in &manifest.settings {
        if let Some(given) = operator.get(&spec.name) {
            typed(spec, id, given)?;
        }
    }
    Ok(())
}

/// The operator's value as the plugin reads it (an integer fits a number); a wrong type is an
/// error naming the declared type and the given one.
fn typed(spec: &SettingSpec, id: &str, given: &SettingValue) -> Result<String, String> {
    let fits = matches!(
        (spec.kind, given),
        (SettingType::String, SettingValue::String(_))
            | (SettingType::Integer, SettingValue::Integer(_))
            | (
                SettingType::Number,
                SettingValue::Integer(_) | SettingValue::Float(_)
            )
            | (SettingType::Boolean, SettingValue::Boolean(_))
    );
    if fits {
        Ok(given.render())
    } else {
        Err(format!(
            "plugins.{id}.settings.{}: {id} declares it {}; the file gives {}",
            spec.name,
            a(spec.kind.as_str()),
            a(given.type_name())
        ))
    }
}

/// `an integer`, `a string`.
fn a(word: &str) -> String {
    match word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        true => format!("an {word}"),
        false => format!("a {word}"),
    }
}

fn render_default(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One line per declared setting, for operators (`chatd plugins list`): name, type, what it
/// does, and where its value comes from.
pub fn describe(manifest: &Manifest, values: &BTreeMap<String, String>) -> Vec<String> {
    manifest
        .settings
        .iter()
        .map(|spec| {
            let value = match values.get(&spec.name) {
                Some(v) => format!(" = {v:?}"),
                None => " (unset)".into(),
            };
            format!(
                "setting {} ({}){value}: {}",
                spec.name,
                spec.kind.as_str(),
                spec.description
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(settings: &str, config: &str) -> Manifest {
        Manifest::parse(&format!(
            r#"{{"id":"weather","kind":"tool","wit":"chatd:plugin@0.1.0","grants":{{"config":{config}}},"settings":{settings}}}"#
        ))
        .unwrap()
    }

    const DECLARED: &str = r#"[
        {"name":"units","type":"string","description":"metric or imperial","default":"metric"},
        {"name":"days","type":"integer","description":"forecast days"},
        {"name":"ratio","type":"number","description":"a ratio","default":0.5}
    ]"#;

    #[test]
    fn declared_settings_take_the_operators_values_or_their_defaults() {
        let operator = BTreeMap::from([
            ("days".to_string(), SettingValue::Integer(3)),
            ("ratio".to_string(), SettingValue::Integer(1)),
            ("colour".to_string(), SettingValue::String("red".into())),
        ]);
        let host = BTreeMap::from([("title_model", "m".to_string())]);
        let granted = grant(
            &manifest(DECLARED, r#"["title_model","agent_model"]"#),
            "weather",
            BTreeMap::from([("weather_base_url".into(), "http://h".into())]),
            &host,
            Some(&operator),
        )
        .unwrap();
        let values: Vec<(&str, &str)> = granted
            .values
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            values,
            [
                ("days", "3"),
                ("ratio", "1"),
                ("title_model", "m"),
                ("units", "metric"),
                ("weather_base_url", "http://h"),
            ]
        );
        assert_eq!(
            granted.ignored,
            ["plugins.weather.settings.colour: weather declares no such setting; not readable"]
        );
        let lines = describe(&manifest(DECLARED, "[]"), &granted.values);
        assert_eq!(lines[1], "setting days (integer) = \"3\": forecast days");
    }

    #[test]
    fn a_wrong_type_names_the_setting_and_both_types() {
        let operator = BTreeMap::from([("units".to_string(), SettingValue::Integer(2))]);
        let err = grant(
            &manifest(DECLARED, "[]"),
            "weather",
            BTreeMap::new(),
            &BTreeMap::new(),
            Some(&operator),
        )
        .err()
        .unwrap();
        assert_eq!(
            err,
            "plugins.weather.settings.units: weather declares it a string; the file gives an integer"
        );
        let err = grant(
            &manifest("[]", r#"["engine_a_api_key"]"#),
            "weather",
            BTreeMap::new(),
            &BTreeMap::new(),
            None,
        )
        .err()
        .unwrap();
        assert!(err.starts_with("grants.config"), "{err}");
    }
}
