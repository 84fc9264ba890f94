//! An OTLP/HTTP trace receiver on loopback: what an OpenTelemetry collector would get from
//! chatd, decoded with the protocol's own protobuf types.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use prost::Message;

/// One received span, its ids in hex.
#[derive(Clone, Debug)]
pub struct Span {
    pub name: String,
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: String,
    /// Its attributes as text.
    pub attributes: Vec<(String, String)>,
    /// The status code: 0 unset, 1 ok, 2 error.
    pub status: i32,
    /// The service that sent it (`service.name` of its resource).
    pub service: String,
}

impl Span {
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Clone, Default)]
pub struct Receiver {
    spans: Arc<Mutex<Vec<Span>>>,
    pub url: String,
}

impl Receiver {
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let receiver = Self {
            spans: Arc::default(),
            url: format!("http://{}", listener.local_addr().unwrap()),
        };
        let app = axum::Router::new()
            .route("/v1/traces", post(export))
            .with_state(receiver.spans.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        receiver
    }

    /// Waits until the spans received satisfy `done` (at most 30 s); returns them.
    pub async fn until(&self, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        let started = Instant::now();
        loop {
            let spans = self.spans.lock().unwrap().clone();
            if done(&spans) {
                return spans;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the spans expected did not arrive; got {:#?}",
                spans
                    .iter()
                    .map(|s| (&s.name, &s.span_id, &s.parent_span_id))
                    .collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

async fn export(State(spans): State<Arc<Mutex<Vec<Span>>>>, body: Bytes) -> (StatusCode, Vec<u8>) {
    let request = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf request");
    let mut received = Vec::new();
    for resource in request.resource_spans {
        let service = resource
            .resource
            .iter()
            .flat_map(|r| r.attributes.iter())
            .find(|kv| kv.key == "service.name")
            .map(|kv| text(kv.value.as_ref().and_then(|v| v.value.as_ref())))
            .unwrap_or_default();
        for scope in resource.scope_spans {
            for span in scope.spans {
                received.push(Span {
                    name: span.name,
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    attributes: span
                        .attributes
                        .iter()
                        .map(|kv| {
                            let value = kv.value.as_ref().and_then(|v| v.value.as_ref());
                            (kv.key.clone(), text(value))
                        })
                        .collect(),
                    status: span.status.map_or(0, |s| s.code),
                    service: service.clone(),
                });
            }
        }
    }
    spans.lock().unwrap().extend(received);
    (
        StatusCode::OK,
        ExportTraceServiceResponse::default().encode_to_vec(),
    )
}

fn text(value: Option<&AnyValue>) -> String {
    match value {
        Some(AnyValue::StringValue(s)) => s.clone(),
        Some(AnyValue::IntValue(i)) => i.to_string(),
        Some(AnyValue::DoubleValue(d)) => d.to_string(),
        Some(AnyValue::BoolValue(b)) => b.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
