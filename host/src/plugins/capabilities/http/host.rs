//! The WIT `http` interface on top of [`crate::egress::send`]: a plugin's request is checked against
//! its grant on every hop; a response is a resource the plugin reads chunk by chunk. A call may
//! hold at most [`MAX_OPEN_RESPONSES`] responses at once (each one holds a connection).

use std::time::Duration;

use wasmtime::component::{HasData, Resource, ResourceTable};

use crate::egress::{Clients, HttpGrant, Incoming, Outgoing, Refusal, send};
use crate::plugins::bindings::imports::chatd::plugin::http;

pub use crate::plugins::bindings::imports::chatd::plugin::http::{
    Header as WitHeader, Request as WitRequest,
};

/// Responses one call may hold open at once.
pub const MAX_OPEN_RESPONSES: usize = 16;

/// What the `http` interface sees of one call's state: its grant, the shared connection pools,
/// the resource table its responses live in, and how many are open.
pub struct HttpView<'a> {
    pub grant: &'a HttpGrant,
    pub clients: &'a Clients,
    pub table: &'a mut ResourceTable,
    pub open_responses: &'a mut usize,
}

/// Links the `http` interface through [`HttpView`].
pub struct HttpHost;

impl HasData for HttpHost {
    type Data<'a> = HttpView<'a>;
}

impl http::Host for HttpView<'_> {
    async fn send(
        &mut self,
        request: http::Request,
    ) -> Result<Resource<Incoming>, http::HttpError> {
        let outgoing = outgoing(request);
        if *self.open_responses >= MAX_OPEN_RESPONSES {
            return Err(http::HttpError::InvalidRequest(format!(
                "at most {MAX_OPEN_RESPONSES} responses may be open at once; drop one first"
            )));
        }
        let incoming = send(self.clients, self.grant, outgoing)
            .await
            .map_err(wit_error)?;
        let handle = self
            .table
            .push(incoming)
            .map_err(|e| http::HttpError::Connection(format!("cannot keep the response: {e}")))?;
        *self.open_responses += 1;
        Ok(handle)
    }

    async fn fetch(
        &mut self,
        request: http::Request,
        max_bytes: u64,
    ) -> Result<http::Fetched, http::HttpError> {
        let mut incoming = send(self.clients, self.grant, outgoing(request))
            .await
            .map_err(wit_error)?;
        let mut body = Vec::new();
        while let Some(chunk) = incoming.next_chunk().await.map_err(wit_error)? {
            if body.len() as u64 + chunk.len() as u64 > max_bytes {
                return Err(http::HttpError::TooLarge(max_bytes));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(http::Fetched {
            status: incoming.status,
            headers: wit_headers(&incoming.headers),
            url: incoming.url,
            body,
        })
    }
}

fn wit_headers(headers: &[(String, String)]) -> Vec<http::Header> {
    headers
        .iter()
        .map(|(name, value)| http::Header {
            name: name.clone(),
            value: value.clone(),
        })
        .collect()
}

impl http::HostResponse for HttpView<'_> {
    async fn status(&mut self, this: Resource<Incoming>) -> u16 {
        self.table.get(&this).map(|r| r.status).unwrap_or(0)
    }

    async fn headers(&mut self, this: Resource<Incoming>) -> Vec<http::Header> {
        self.table
            .get(&this)
            .map(|r| wit_headers(&r.headers))
            .unwrap_or_default()
    }

    async fn url(&mut self, this: Resource<Incoming>) -> String {
        self.table
            .get(&this)
            .map(|r| r.url.clone())
            .unwrap_or_default()
    }

    async fn next_chunk(
        &mut self,
        this: Resource<Incoming>,
    ) -> Result<Option<Vec<u8>>, http::HttpError> {
        match self.table.get_mut(&this) {
            Ok(response) => response.next_chunk().await.map_err(wit_error),
            Err(e) => Err(http::HttpError::InvalidRequest(format!(
                "unknown response handle: {e}"
            ))),
        }
    }

    async fn drop(&mut self, this: Resource<Incoming>) -> wasmtime::Result<()> {
        self.table.delete(this)?;
        *self.open_responses = self.open_responses.saturating_sub(1);
        Ok(())
    }
}

/// A plugin's request record as the host sends it.
pub fn outgoing(request: http::Request) -> Outgoing {
    Outgoing {
        method: match request.method {
            http::Method::Get => reqwest::Method::GET,
            http::Method::Post => reqwest::Method::POST,
            http::Method::Put => reqwest::Method::PUT,
            http::Method::Patch => reqwest::Method::PATCH,
            http::Method::Delete => reqwest::Method::DELETE,
            http::Method::Head => reqwest::Method::HEAD,
        },
        url: request.url,
        headers: request
            .headers
            .into_iter()
            .map(|h| (h.name, h.value))
            .collect(),
        body: request.body,
        timeout: request
            .timeout_ms
            .map(|ms| Duration::from_millis(ms.into())),
        follow_redirects: request.follow_redirects.unwrap_or(true),
    }
}

fn wit_error(refusal: Refusal) -> http::HttpError {
    match refusal {
        Refusal::Denied(why) => http::HttpError::Denied(why),
        Refusal::Invalid(why) => http::HttpError::InvalidRequest(why),
        Refusal::Timeout => http::HttpError::Timeout,
        Refusal::Connection(why) => http::HttpError::Connection(why),
        Refusal::TooLarge(cap) => http::HttpError::TooLarge(cap),
    }
}
