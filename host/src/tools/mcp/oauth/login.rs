//! A login: an authorization code with PKCE S256 and an unguessable `state`, then the token
//! request. Approved at once by a [`Consent`] (`chatd mcp call`: the authorization server
//! approves, or a person does at the printed URL), or, for a served server, begun by Connect
//! ([`Authorizer::begin`]: the pending login sealed in the store under the state's hash, bound
//! to the browser that asked) and finished by the callback its redirect reaches, on any
//! instance ([`Authorizer::complete`]).

use std::time::Duration;

use sha2::{Digest, Sha256};
use url::Url;

use super::client::Identity;
use super::discovery::Discovered;
use super::saved::{Pending, Saved, SavedClient};
use super::{Authorizer, Callback, Consent, State, Status, token};

/// Why a login begun by Connect was not finished.
#[derive(Debug)]
pub enum Finish {
    /// The redirect or the authorization server refused it (the person's refusal, another
    /// issuer, a code the token endpoint would not take).
    Refused(String),
    /// The token endpoint or the store could not be reached.
    Unavailable(String),
}

/// How long a login begun by Connect waits for its callback.
pub const PENDING_FOR: Duration = Duration::from_secs(600);

/// The SHA-256 of `value`, hex: how a state and a browser's cookie are kept.
pub fn digest(value: &str) -> String {
    Sha256::digest(value.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The authorization request's URL.
fn authorization_url(
    discovered: &Discovered,
    identity: &Identity,
    redirect_uri: &str,
    verifier: &str,
    state: &str,
    scope: Option<&str>,
) -> Url {
    let mut url = discovered.issuer.authorization_endpoint.clone();
    {
        let mut query = url.query_pairs_mut();
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", &identity.client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("code_challenge", &token::challenge(verifier))
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", state)
            .append_pair("resource", &discovered.resource);
        if let Some(scope) = scope {
            query.append_pair("scope", scope);
        }
    }
    url
}

/// The code of a redirect that came back from `discovered`'s issuer, checked: no error, the
/// issuer it names (RFC 9207, compared as strings, §2.4; required when the issuer promises it,
/// or when `need_iss`: nothing else tells its answer from another issuer's), the code.
fn code(discovered: &Discovered, callback: Callback, need_iss: bool) -> Result<String, String> {
    let issuer = &discovered.issuer;
    match &callback.iss {
        Some(iss) if *iss != issuer.issuer => {
            return Err(format!(
                "the login came back from another issuer ({:?}, not {}); it is not used",
                iss.chars().take(200).collect::<String>(),
                issuer.issuer
            ));
        }
        None if issuer.iss_parameter => {
            return Err(format!(
                "the login came back without the iss parameter {} promises; it is not used",
                issuer.issuer
            ));
        }
        None if need_iss => {
            return Err(format!(
                "the login came back without the iss parameter (RFC 9207), which a client_id \
                 registered beforehand needs to tell {}'s answer from another issuer's; it is \
                 not used",
                issuer.issuer
            ));
        }
        _ => {}
    }
    if let Some(error) = callback.error {
        let error: String = error.chars().take(200).collect();
        return Err(format!(
            "the authorization server refused the login: {error}"
        ));
    }
    callback
        .code
        .filter(|c| !c.is_empty())
        .ok_or_else(|| "the login came back without a code".into())
}

/// A login approved at once by `consent`, its tokens kept by `auth`.
pub(super) async fn approved(
    auth: &Authorizer,
    state: &mut State,
    consent: &dyn Consent,
    scope: Option<String>,
) -> Result<(), String> {
    let redirect_uri = consent.redirect_uri();
    let identity = auth.identity(state, &redirect_uri).await?;
    let discovered = auth.discovered(state).await?.clone();
    let verifier = token::random(32);
    let expected = token::random(32);
    let url = authorization_url(
        &discovered,
        &identity,
        &redirect_uri,
        &verifier,
        &expected,
        scope.as_deref(),
    );
    let callback = consent.approve(auth.http().await, url).await?;
    let same_state = callback
        .state
        .as_deref()
        .is_some_and(|s| subtle::ConstantTimeEq::ct_eq(s.as_bytes(), expected.as_bytes()).into());
    if !same_state {
        return Err("the login came back with another state; it is not used".into());
    }
    // The command line's own loopback redirect, made for this login alone: nothing else
    // arrives there.
    let code = code(&discovered, callback, false)?;
    let tokens = token::exchange(
        auth.http().await,
        &discovered.issuer.token_endpoint,
        &identity,
        token::Code {
            code: &code,
            verifier: &verifier,
            redirect_uri: &redirect_uri,
        },
        &discovered.resource,
        scope.as_deref(),
    )
    .await
    .map_err(String::from)?;
    if let Some(keeper) = &auth.keeper {
        let saved = Saved::new(auth.server.as_str(), &discovered, &identity, &tokens);
        keeper
            .store
            .save_login(&keeper.login, &keeper.seal(&saved))
            .await
            .map_err(|e| format!("the login could not be stored: {e}"))?;
    }
    auth.set(state, Some(tokens));
    Ok(())
}

impl Authorizer {
    /// Begins a login of a served server for the browser whose cookie is `browser`: the
    /// authorization URL to send it to, and the login's state; the login waits
    /// [`PENDING_FOR`] for its callback. A client registered beforehand shares its redirect
    /// URI with every server of its issuer's, so its issuer must name itself in its answers
    /// (RFC 9207): refused otherwise, before the person is sent to log in.
    pub async fn begin(&self, redirect_uri: &str, browser: &str) -> Result<(Url, String), Finish> {
        let unavailable = |why: String| Finish::Unavailable(why);
        let keeper = self
            .keeper
            .as_ref()
            .ok_or_else(|| unavailable("this server keeps no login".into()))?;
        let mut state = self.state.lock().await;
        let identity = self
            .identity(&mut state, redirect_uri)
            .await
            .map_err(unavailable)?;
        let discovered = self
            .discovered(&mut state)
            .await
            .map_err(unavailable)?
            .clone();
        if self.pre_registered() && !discovered.issuer.iss_parameter {
            return Err(Finish::Refused(format!(
                "its client_id was registered beforehand, so its logins come back to the \
                 callback every such server shares, and its authorization server {} does not \
                 say it names itself in its answers (authorization_response_iss_parameter_supported, \
                 RFC 9207), which tells one server's answer from another's. Remove client_id \
                 to let chatd register a client of its own, with a callback of this server's",
                discovered.issuer.issuer
            )));
        }
        let scope = self.scope(&mut state).await.map_err(unavailable)?;
        let verifier = token::random(32);
        let login_state = token::random(32);
        let url = authorization_url(
            &discovered,
            &identity,
            redirect_uri,
            &verifier,
            &login_state,
            scope.as_deref(),
        );
        let pending = Pending {
            url: self.server.to_string(),
            discovered: (&discovered).into(),
            client: SavedClient::from(&identity),
            redirect_uri: redirect_uri.to_string(),
            verifier,
            scope,
            browser: digest(browser),
        };
        let expires_at =
            chrono::Utc::now() + chrono::TimeDelta::from_std(PENDING_FOR).expect("ten minutes");
        let expires_at = crate::vocabulary::format_micros(expires_at.timestamp_micros());
        keeper
            .store
            .start_login(
                &digest(&login_state),
                &keeper.login,
                &keeper.seal(&pending),
                &expires_at,
            )
            .await
            .map_err(|e| unavailable(format!("the login could not be stored: {e}")))?;
        Ok((url, login_state))
    }

    /// Finishes the login `pending` with the redirect that came back: its code exchanged, its
    /// tokens stored for every instance.
    pub async fn complete(&self, pending: Pending, callback: Callback) -> Result<(), Finish> {
        let unavailable = |why: String| Finish::Unavailable(why);
        let keeper = self
            .keeper
            .as_ref()
            .ok_or_else(|| Finish::Refused("this server keeps no login".into()))?;
        if pending.url != self.server.as_str() {
            return Err(Finish::Refused(
                "the server's URL changed since this login began".into(),
            ));
        }
        let discovered = pending.discovered.discovered();
        let code = code(&discovered, callback, self.pre_registered()).map_err(Finish::Refused)?;
        let identity = pending.client.identity();
        let tokens = token::exchange(
            self.http().await,
            &discovered.issuer.token_endpoint,
            &identity,
            token::Code {
                code: &code,
                verifier: &pending.verifier,
                redirect_uri: &pending.redirect_uri,
            },
            &discovered.resource,
            pending.scope.as_deref(),
        )
        .await
        .map_err(|refusal| match refusal.refused {
            true => Finish::Refused(refusal.why),
            false => unavailable(refusal.why),
        })?;
        let saved = Saved::new(self.server.as_str(), &discovered, &identity, &tokens);
        // Under the login's lock: a refresh ending the previous login (and deleting it) is
        // done before this one is stored, never after.
        let mut state = self.state.lock().await;
        keeper
            .store
            .save_login(&keeper.login, &keeper.seal(&saved))
            .await
            .map_err(|e| unavailable(format!("the login could not be stored: {e}")))?;
        self.adopt(&mut state, &saved);
        state.step_ups = 0;
        Ok(())
    }

    /// Ends the login: its tokens revoked where the issuer has a revocation endpoint (RFC
    /// 7009; a failure there is logged, the tokens are deleted all the same), then deleted.
    pub async fn disconnect(&self) -> Result<(), String> {
        let mut state = self.state.lock().await;
        self.reload(&mut state).await;
        if let (Some(discovered), Some(identity), Some(tokens)) =
            (&state.discovered, &state.identity, &state.tokens)
            && let Some(endpoint) = &discovered.issuer.revocation_endpoint
        {
            let (token, hint) = match &tokens.refresh {
                Some(refresh) => (refresh.expose(), "refresh_token"),
                None => (tokens.access.expose(), "access_token"),
            };
            let (authorization, fields) = identity.credentials();
            let mut form: Vec<(&str, &str)> = vec![("token", token), ("token_type_hint", hint)];
            form.extend(fields.iter().map(|(k, v)| (*k, v.as_str())));
            match self
                .http()
                .await
                .post_form(endpoint, &form, authorization)
                .await
            {
                Ok(answer) if answer.ok() => {}
                Ok(answer) => tracing::warn!(
                    "{}: revocation refused (HTTP {}){}",
                    self.name(),
                    answer.status,
                    answer.oauth_error()
                ),
                Err(why) => tracing::warn!("{}: revocation failed: {why}", self.name()),
            }
        }
        if let Some(keeper) = &self.keeper {
            keeper
                .store
                .delete_login(&keeper.login)
                .await
                .map_err(|e| format!("the login could not be deleted: {e}"))?;
        }
        self.set(&mut state, None);
        self.set_status(Status::NeedsLogin("disconnected".into()));
        Ok(())
    }
}
