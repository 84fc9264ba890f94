//! The operator's configuration as the plugin host needs it: the services, the host settings
//! plugins may read, the plugin settings, the providers to serve, the devbox, the private-network
//! switch. Built from the environment ([`Config`]) and the configuration file, if any; built
//! again when the file changes (the devbox stays: it is the environment's).

use std::collections::BTreeMap;

use crate::config::Config;
use crate::config::file::{DeclaredProvider, FileConfig, SettingValue};
use crate::egress::services::{Owner, Service, Services, SetBy};
use crate::plugins::builtin;
use crate::plugins::capabilities::ssh::DevboxAccess;

/// A provider this configuration serves.
#[derive(Clone, Debug, PartialEq)]
pub struct ProviderSpec {
    pub id: String,
    pub runs: Runs,
    /// Listed with this error instead of asking for a list (a default provider without its key).
    pub listing_error: Option<String>,
    /// Added to its listed models (AGENT_MODEL for the agent).
    pub extra_model: Option<String>,
}

/// What serves a provider.
#[derive(Clone, Debug, PartialEq)]
pub enum Runs {
    /// The provider plugin of this id, on the service its manifest names.
    Plugin(String),
    /// An adapter's component under the provider's own id and upstream.
    Declared(Box<DeclaredProvider>),
}

#[derive(Clone, Debug, Default)]
pub struct OperatorSettings {
    pub services: Services,
    /// Host settings plugins may ask to read (`grants.config`), those that are set.
    pub host_values: BTreeMap<&'static str, String>,
    /// `[plugins.ID.settings]`.
    pub plugin_values: BTreeMap<String, BTreeMap<String, SettingValue>>,
    pub allow_private: bool,
    pub devbox: DevboxAccess,
    /// The providers to serve, defaults first.
    pub providers: Vec<ProviderSpec>,
    /// Default providers this configuration does not serve, and why.
    pub unserved: Vec<(String, String)>,
    /// `[retry]`: each provider's retry policy.
    pub retry: crate::config::retry::RetrySettings,
    /// The bundled `python` tool's settings (CHAT_PYTHON_*, `[python]`).
    pub python: crate::config::python::PythonSettings,
}

impl OperatorSettings {
    /// The environment alone (no configuration file).
    pub fn from_config(config: &Config) -> Self {
        let empty = FileConfig::default();
        Self::build(config, &empty, DevboxAccess::from_config(config))
    }

    /// The environment and `file`; `devbox` is kept from an earlier build. Refused, in one line
    /// naming the key and the rule, when the file contradicts the built-in table.
    pub fn new(config: &Config, file: &FileConfig, devbox: DevboxAccess) -> Result<Self, String> {
        check_against_builtins(file)?;
        Ok(Self::build(config, file, devbox))
    }

    fn build(config: &Config, file: &FileConfig, devbox: DevboxAccess) -> Self {
        let services = services(config, file);
        let mut providers = Vec::new();
        let mut unserved = Vec::new();
        for default in builtin::PROVIDERS {
            // The variable, or the file's key for the provider's service where it is unset.
            let key_set = (default.key)(config).is_some()
                || services
                    .get(default.service)
                    .is_some_and(|s| s.key.is_some());
            if default.only_with_key && !key_set {
                unserved.push((
                    default.id.to_string(),
                    format!("{} is not set", default.key_var),
                ));
                continue;
            }
            providers.push(ProviderSpec {
                id: default.id.to_string(),
                runs: Runs::Plugin(default.id.to_string()),
                listing_error: (!key_set).then(|| format!("{} is not set", default.key_var)),
                extra_model: (default.id == builtin::AGENT_MODEL_PROVIDER)
                    .then(|| config.agent_model.clone())
                    .flatten(),
            });
        }
        for declared in file.providers.values() {
            providers.push(ProviderSpec {
                id: declared.id.clone(),
                runs: Runs::Declared(Box::new(declared.clone())),
                listing_error: None,
                extra_model: None,
            });
        }
        let python = crate::config::python::PythonSettings::new(&config.python, &file.python);
        let mut host_values: BTreeMap<&'static str, String> = builtin::operator(config)
            .into_iter()
            .filter_map(|(name, value)| Some((name, value?)))
            .collect();
        host_values.extend(python.readable());
        Self {
            services,
            host_values,
            plugin_values: file.plugin_settings.clone(),
            allow_private: config.chatd_allow_private_networks,
            devbox,
            providers,
            unserved,
            retry: file.retry.clone(),
            python,
        }
    }

    /// Why the plugin (or tool) with this id may not serve, if it may not.
    pub fn refusal(&self, id: &str) -> Option<String> {
        let interpreter = id == builtin::INTERPRETER || id == builtin::INTERPRETER_TOOL;
        if interpreter && !self.python.enabled {
            return Some("CHAT_PYTHON_TOOL_ENABLED (or [python] enabled) is false".into());
        }
        self.devbox.refusal(id)
    }

    /// Why a bundled plugin is not even compiled at start: a devbox tool not enabled, the
    /// interpreter turned off by its variable (the file may still turn it on later, so it is
    /// compiled then).
    pub fn not_compiled(&self, id: &str) -> Option<String> {
        if id == builtin::INTERPRETER {
            return self
                .python
                .disabled_by_variable
                .then(|| "CHAT_PYTHON_TOOL_ENABLED is false".into());
        }
        self.devbox.refusal(id)
    }
}

/// What the file may not say given the built-in table (the file itself is checked without it,
/// in `config::file`): a declared provider may not take a contract provider's id, and a service
/// that is not built in needs its base URL and the plugins that may use it. Checked where the
/// file is read (`plugin_host.rs`, naming the file as a load error does) and again here.
pub fn check_against_builtins(file: &FileConfig) -> Result<(), String> {
    for id in file.providers.keys() {
        if builtin::is_default_provider(id) {
            return Err(format!(
                "providers.{id}: {id} is one of the contract's providers; its variables \
                 configure it (its upstream is also [services.NAME] of the same mechanism)"
            ));
        }
    }
    for (name, service) in &file.services {
        if builtin::is_builtin_service(name) {
            continue;
        }
        if service.base_url.is_none() {
            return Err(format!("services.{name}.base_url: a new service needs one"));
        }
        if service.plugins.is_empty() {
            return Err(format!(
                "services.{name}.plugins: must name the plugin ids that may use it"
            ));
        }
    }
    Ok(())
}

/// The built-in services, with what the file adds to them, and the file's own. A built-in
/// service's variable wins over the file's value; the file's `plugins` join its owners.
fn services(config: &Config, file: &FileConfig) -> Services {
    let mut all = builtin::services(config);
    for service in &mut all {
        let Some(declared) = file.services.get(&service.name) else {
            continue;
        };
        let SetBy::Variables { base_url, key } = service.set_by.clone() else {
            continue;
        };
        let unset = |var: &str| !config.is_set(&var.to_ascii_lowercase());
        if let Some(url) = &declared.base_url
            && unset(base_url)
        {
            service.base_url = Some(url.clone());
        }
        if let Some(secret) = &declared.api_key
            && key.is_none_or(unset)
        {
            service.key = Some(secret.clone());
        }
        if let Some(auth) = &declared.auth {
            service.auth = auth.clone();
        }
        service.headers.extend(declared.headers.iter().cloned());
        service
            .owners
            .extend(declared.plugins.iter().map(|id| Owner::any(id)));
    }
    for declared in file.services.values() {
        if builtin::is_builtin_service(&declared.name) {
            continue;
        }
        all.push(Service {
            name: declared.name.clone(),
            base_url: declared.base_url.clone(),
            key: declared.api_key.clone(),
            auth: declared
                .auth
                .clone()
                .unwrap_or(crate::config::names::Auth::Bearer),
            headers: declared.headers.clone(),
            owners: declared.plugins.iter().map(|id| Owner::any(id)).collect(),
            base_url_key: format!("{}_base_url", declared.name),
            set_by: SetBy::File(format!("[services.{}]", declared.name)),
        });
    }
    Services::new(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(text: &str) -> String {
        let file = FileConfig::parse(text, &|_| None).unwrap();
        let config = Config::from_args(["chatd"]).unwrap();
        match OperatorSettings::new(&config, &file, DevboxAccess::default()) {
            Err(e) => e,
            Ok(_) => panic!("{text:?} was accepted"),
        }
    }

    #[test]
    fn the_file_may_not_contradict_the_builtin_table() {
        assert!(
            refusal("[providers.provider_a]\nadapter = \"a\"\nbase_url = \"http://h\"")
                .starts_with("providers.provider_a: provider_a is one of the contract's providers")
        );
        assert!(
            refusal("[services.weather]\nbase_url = \"http://h\"")
                .starts_with("services.weather.plugins: must name")
        );
        assert!(
            refusal("[services.weather]\nplugins = [\"w\"]")
                .starts_with("services.weather.base_url: a new service needs one")
        );
        // A built-in service needs neither: its variables give the rest.
        let file = FileConfig::parse("[services.engine_b]\nplugins = [\"w\"]", &|_| None).unwrap();
        let config = Config::from_args(["chatd"]).unwrap();
        assert!(OperatorSettings::new(&config, &file, DevboxAccess::default()).is_ok());
    }
}
