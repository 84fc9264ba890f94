//! The `http` capability: a plugin's manifest and services decided into an
//! [`crate::egress::HttpGrant`] ([`grant`], the one function that decides it), and the WIT `http`
//! interface on top of [`crate::egress::send`] ([`host`]). What the grant means on the wire, the
//! route, the resolver, the scrubbing, is `egress/`'s.

pub mod host;

use std::time::Duration;

use crate::config::Secret;
use crate::egress::{Credential, HttpGrant, MAX_BODY_BYTES, Origin, scrub};

/// Decides a plugin's HTTP: the manifest's own origins (public addresses only) and the public
/// web if it asks, its services' origins (`trusted`, any address) with their `credentials`,
/// CHATD_ALLOW_PRIVATE_NETWORKS, and the caps.
pub fn grant(
    manifest: &crate::plugins::manifest::Manifest,
    trusted: Vec<Origin>,
    credentials: Vec<Credential>,
    allow_private: bool,
) -> Result<HttpGrant, String> {
    let origins = manifest
        .grants
        .http
        .iter()
        .map(|origin| {
            Origin::parse(origin).ok_or_else(|| format!("grants.http: {origin:?} is not an origin"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let scrubbed = scrub::keys(
        credentials
            .iter()
            .filter_map(|c| c.secret.as_ref())
            .map(Secret::expose),
    );
    Ok(HttpGrant {
        trusted,
        origins,
        public_web: manifest.grants.public_web,
        allow_private,
        local_network: false,
        credentials,
        scrubbed,
        max_body_bytes: MAX_BODY_BYTES,
        max_timeout: Duration::from_millis(manifest.limits.timeout_ms),
    })
}
