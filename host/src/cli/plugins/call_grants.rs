//! `chatd plugins call --grant …`: a one-off call run with only some of the grants its manifest
//! asks for, to see what the plugin does without the rest. The manifest is narrowed before it
//! is resolved, so what remains is still decided by the configuration as at load
//! (`plugins/capabilities/`), never widened: a `--grant` the manifest does not ask for is refused.

use serde_json::Value;

/// `manifest_json` with its grants cut down to `wanted` (`http:ORIGIN`, `service:NAME`,
/// `config:KEY`, `public-web`, `ssh`; `none` alone for none of them). An empty `wanted` leaves
/// it as it is.
pub fn narrow(manifest_json: &str, wanted: &[String]) -> Result<String, String> {
    if wanted.is_empty() {
        return Ok(manifest_json.to_string());
    }
    let mut manifest: Value =
        serde_json::from_str(manifest_json).map_err(|e| format!("the manifest: {e}"))?;
    if !manifest.is_object() {
        return Err("the manifest is not a JSON object".into());
    }
    let asked = manifest.get("grants").cloned().unwrap_or(Value::Null);
    let mut kept = serde_json::Map::new();
    for grant in wanted.iter().filter(|g| g.as_str() != "none") {
        let (kind, value) = grant.split_once(':').unwrap_or((grant.as_str(), ""));
        let (field, flag) = match kind {
            "http" => ("http", false),
            "service" => ("services", false),
            "config" => ("config", false),
            "public-web" => ("publicWeb", true),
            "ssh" => ("ssh", true),
            _ => {
                return Err(format!(
                    "{grant:?}: a grant is http:ORIGIN, service:NAME, config:KEY, public-web, \
                     ssh or none"
                ));
            }
        };
        let asks = match (&asked[field], flag) {
            (Value::Bool(true), true) => value.is_empty(),
            (Value::Array(items), false) => !value.is_empty() && items.iter().any(|i| i == value),
            _ => false,
        };
        if !asks {
            return Err(format!("{grant:?}: the manifest does not ask for it"));
        }
        if flag {
            kept.insert(field.into(), Value::Bool(true));
        } else if let Value::Array(items) = kept
            .entry(field)
            .or_insert_with(|| Value::Array(Vec::new()))
        {
            items.push(value.into());
        }
    }
    if wanted.iter().any(|g| g == "none") && !kept.is_empty() {
        return Err("--grant none: given with other grants".into());
    }
    manifest["grants"] = Value::Object(kept);
    Ok(manifest.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ASKS: &str = r#"{"id":"w","kind":"tool","wit":"chatd:plugin@0.1.2",
        "grants":{"http":["https://a.example","https://b.example"],"services":["weather"],
        "config":["title_model"],"publicWeb":true}}"#;

    fn grants(wanted: &[&str]) -> Result<Value, String> {
        let wanted: Vec<String> = wanted.iter().map(|s| s.to_string()).collect();
        narrow(ASKS, &wanted)
            .map(|json| serde_json::from_str::<Value>(&json).unwrap()["grants"].clone())
    }

    #[test]
    fn keeps_only_what_is_named() {
        assert_eq!(
            grants(&["http:https://b.example", "service:weather"]).unwrap(),
            serde_json::json!({"http": ["https://b.example"], "services": ["weather"]})
        );
        assert_eq!(
            grants(&["public-web"]).unwrap(),
            serde_json::json!({"publicWeb": true})
        );
        assert_eq!(grants(&["none"]).unwrap(), serde_json::json!({}));
        assert_eq!(narrow(ASKS, &[]).unwrap(), ASKS);
    }

    #[test]
    fn never_widens() {
        for (wanted, why) in [
            ("http:https://c.example", "does not ask"),
            ("ssh", "does not ask"),
            ("service:other", "does not ask"),
            ("http", "does not ask"),
            ("files:/", "a grant is"),
        ] {
            let err = grants(&[wanted]).unwrap_err();
            assert!(err.contains(why), "{wanted}: {err}");
        }
        assert!(grants(&["none", "public-web"]).is_err());
        let not_an_object = narrow("[1]", &["none".to_string()]).unwrap_err();
        assert!(
            not_an_object.contains("not a JSON object"),
            "{not_an_object}"
        );
    }
}
