//! What granting a service gives: a [`Reach`], its origin reachable whatever its address (the
//! operator chose it, loopback included), its base URL readable as a setting (without any
//! `user:password@`), and its credential and headers added by the host to every request to that
//! origin and to no other.

use std::collections::BTreeMap;

use base64::Engine as _;
use url::Url;

use super::services::Service;
use super::{Credential, Origin, Place};
use crate::config::Secret;
use crate::config::names::Auth;

/// What a plugin's services give it: origins it reaches at any address, the settings it reads
/// (their base URLs), the credentials and headers the host adds for it, and for operators a line
/// per service.
#[derive(Default)]
pub struct Reach {
    pub trusted: Vec<Origin>,
    pub settings: BTreeMap<String, String>,
    pub credentials: Vec<Credential>,
    pub lines: Vec<String>,
}

impl Reach {
    /// Grants `service` to the plugin `id` of `kind`, if it is one of the service's owners; a
    /// service without a base URL gives nothing. `also_as` is one more setting name the base URL
    /// is readable under (`base_url`, for a provider's own upstream).
    pub fn add(
        &mut self,
        service: &Service,
        id: &str,
        kind: &str,
        also_as: Option<&str>,
    ) -> Result<(), String> {
        if !service.admits(id, kind) {
            return Err(refusal(service));
        }
        let Some(base) = &service.base_url else {
            self.lines.push(format!(
                "service {} ({} unset: nothing)",
                service.name,
                service.set_by.base_url_name()
            ));
            return Ok(());
        };
        let origin = Origin::of(base).ok_or_else(|| {
            format!(
                "{}: the base URL has no host",
                service.set_by.base_url_name()
            )
        })?;
        // A user and password in the URL are a credential too: the plugin reads the URL without
        // them, and the host sends them as Basic authentication to that origin.
        let (bare, basic) = split_userinfo(base);
        let shown = bare.as_str().trim_end_matches('/').to_string();
        self.settings
            .insert(service.base_url_key.clone(), shown.clone());
        if let Some(name) = also_as {
            self.settings.insert(name.to_string(), shown.clone());
        }
        let sent = self.add_credentials(service, &origin, basic);
        if !self.trusted.contains(&origin) {
            self.trusted.push(origin);
        }
        self.lines.push(match sent.as_slice() {
            [] => format!("service {}: {shown}", service.name),
            sent => format!(
                "service {}: {shown} with {}",
                service.name,
                sent.join(" and ")
            ),
        });
        Ok(())
    }

    /// The credentials and headers the host adds for `service` on requests to `origin`: its key
    /// as its `auth` says, else the base URL's user and password; what is sent, for operators.
    fn add_credentials(
        &mut self,
        service: &Service,
        origin: &Origin,
        basic: Option<Secret>,
    ) -> Vec<String> {
        let mut sent = Vec::new();
        let mut authorization_taken = false;
        if let Some(key) = &service.key {
            let credential = match &service.auth {
                Auth::Bearer => Some((
                    Place::Header(reqwest::header::AUTHORIZATION),
                    Secret::new(format!("Bearer {}", key.expose())),
                )),
                Auth::Header(name) => Some((Place::Header(name.clone()), key.clone())),
                Auth::Query(name) => Some((Place::Query(name.clone()), key.clone())),
                Auth::None => None,
            };
            if let Some((to, value)) = credential {
                authorization_taken = to == Place::Header(reqwest::header::AUTHORIZATION);
                self.credentials.push(Credential {
                    origin: origin.clone(),
                    to,
                    value,
                    secret: Some(key.clone()),
                });
                sent.push(format!(
                    "{} ({})",
                    service.set_by.key_name(),
                    service.auth.describe()
                ));
            }
        }
        if let Some(basic) = basic.filter(|_| !authorization_taken) {
            self.credentials.push(Credential {
                origin: origin.clone(),
                to: Place::Header(reqwest::header::AUTHORIZATION),
                secret: Some(basic.clone()),
                value: basic,
            });
            sent.push("the base URL's user and password".into());
        }
        for (name, value) in &service.headers {
            self.credentials.push(Credential {
                origin: origin.clone(),
                to: Place::Header(name.clone()),
                value: Secret::new(value.to_str().unwrap_or_default()),
                secret: None,
            });
            sent.push(format!("header {name}"));
        }
        sent
    }
}

/// Why `service` may not be granted to a plugin it does not admit.
fn refusal(service: &Service) -> String {
    if service.owners.is_empty() {
        format!("{} lists no plugins that may use it", service.name)
    } else {
        format!(
            "{} belongs to {}; no other plugin can be granted it",
            service.name,
            service.owner_list()
        )
    }
}

/// The URL without `user:password@`, and those as a Basic `Authorization` value.
fn split_userinfo(url: &Url) -> (Url, Option<Secret>) {
    if url.username().is_empty() && url.password().is_none() {
        return (url.clone(), None);
    }
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    let pair = format!(
        "{}:{}",
        decode(url.username()),
        decode(url.password().unwrap_or(""))
    );
    let mut bare = url.clone();
    let _ = bare.set_username("");
    let _ = bare.set_password(None);
    let value = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    );
    (bare, Some(Secret::new(value)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::egress::services::{Owner, SetBy};
    use reqwest::header::{HeaderName, HeaderValue};

    fn service(auth: Auth, key: Option<&str>, base: &str) -> Service {
        Service {
            name: "weather".into(),
            base_url: Some(Url::parse(base).unwrap()),
            key: key.map(Secret::new),
            auth,
            headers: vec![(
                HeaderName::from_static("x-client"),
                HeaderValue::from_static("chatd"),
            )],
            owners: vec![Owner::any("weather")],
            base_url_key: "weather_base_url".into(),
            set_by: SetBy::File("[services.weather]".into()),
        }
    }

    #[test]
    fn auth_forms_parse_and_host_headers_are_refused() {
        assert_eq!(Auth::parse("bearer"), Ok(Auth::Bearer));
        assert_eq!(Auth::parse(" none "), Ok(Auth::None));
        assert_eq!(
            Auth::parse("header:Api-Key"),
            Ok(Auth::Header(HeaderName::from_static("api-key")))
        );
        assert_eq!(Auth::parse("query:key"), Ok(Auth::Query("key".into())));
        for bad in [
            "basic",
            "header:",
            "header:bad name",
            "header:host",
            "query:",
            "query:a b",
            "sk-looks-like-a-key",
        ] {
            let e = Auth::parse(bad).unwrap_err();
            assert!(!e.contains("sk-looks"), "the value is not echoed: {e}");
        }
    }

    #[test]
    fn a_service_reaches_its_origin_with_its_key_and_headers_for_its_owners_only() {
        let s = service(
            Auth::Header(HeaderName::from_static("x-api-key")),
            Some("k-1"),
            "http://127.0.0.1:9/v1/",
        );
        let mut reach = Reach::default();
        reach.add(&s, "weather", "tool", Some("base_url")).unwrap();
        assert_eq!(
            reach.trusted,
            [Origin::parse("http://127.0.0.1:9").unwrap()]
        );
        assert_eq!(reach.settings["weather_base_url"], "http://127.0.0.1:9/v1");
        assert_eq!(reach.settings["base_url"], "http://127.0.0.1:9/v1");
        let headers: Vec<(&str, &str)> = reach
            .credentials
            .iter()
            .map(|c| match &c.to {
                Place::Header(name) => (name.as_str(), c.value.expose()),
                Place::Query(name) => (name.as_str(), c.value.expose()),
            })
            .collect();
        assert_eq!(headers, [("x-api-key", "k-1"), ("x-client", "chatd")]);
        assert_eq!(
            reach.lines,
            [
                "service weather: http://127.0.0.1:9/v1 with the api_key of [services.weather] \
              (header x-api-key) and header x-client"
            ]
        );
        assert!(!reach.lines[0].contains("k-1"));
        let err = Reach::default().add(&s, "thief", "tool", None).unwrap_err();
        assert!(err.contains("belongs to weather"), "{err}");
    }

    #[test]
    fn no_key_or_auth_none_sends_no_credential_and_userinfo_becomes_basic() {
        let mut reach = Reach::default();
        reach
            .add(
                &service(Auth::None, Some("k"), "http://h:1"),
                "weather",
                "tool",
                None,
            )
            .unwrap();
        assert!(
            reach
                .credentials
                .iter()
                .all(|c| c.to == Place::Header(HeaderName::from_static("x-client")))
        );
        let mut reach = Reach::default();
        reach
            .add(
                &service(Auth::None, None, "http://u:p%40ss@h:1/b"),
                "weather",
                "tool",
                None,
            )
            .unwrap();
        assert_eq!(reach.settings["weather_base_url"], "http://h:1/b");
        assert_eq!(reach.credentials[0].value.expose(), "Basic dTpwQHNz");
    }
}
