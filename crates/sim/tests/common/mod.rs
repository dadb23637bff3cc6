//! Helpers shared by the simulator's integration tests: one way to build a simulator on a
//! paused clock, one way to send a request, one way to read the answer.
#![allow(dead_code)]

pub mod gitlab;

use std::net::{IpAddr, Ipv4Addr};

use bytes::Bytes;
use headroom_core::clock::{Clock, Timestamp, TokioClock};
use headroom_sim::{SimConfig, Simulator, TokenSpec};
use http::{Method, Request, Response};
use serde_json::Value;

pub const PEER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1));

/// A fixed instant (2026-11-30T10:00:00Z) so that outputs are reproducible.
pub fn anchor() -> Timestamp {
    "2026-11-30T10:00:00Z".parse().expect("valid timestamp")
}

/// Default config with two tokens of alice, one of bob and one app installation.
pub fn config() -> SimConfig {
    SimConfig::default()
        .with_token(TokenSpec::user("t1", "alice"))
        .with_token(TokenSpec::user("t2", "alice"))
        .with_token(TokenSpec::user("tb", "bob"))
        .with_token(TokenSpec::installation("ghs_app", 42))
}

pub fn sim(config: SimConfig) -> Simulator {
    Simulator::new(config, TokioClock::anchored_at(anchor())).expect("valid config")
}

pub fn now(sim: &Simulator) -> Timestamp {
    sim.clock().now()
}

pub fn request(
    method: Method,
    uri: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> Request<Bytes> {
    let mut b = Request::builder().method(method).uri(uri);
    if let Some(t) = token {
        b = b.header("authorization", format!("Bearer {t}"));
    }
    let body = body
        .map(|v| Bytes::from(serde_json::to_vec(&v).expect("serializable")))
        .unwrap_or_default();
    b.body(body).expect("valid request")
}

pub async fn get(sim: &Simulator, uri: &str, token: Option<&str>) -> Response<Bytes> {
    sim.handle(request(Method::GET, uri, token, None), PEER)
        .await
}

pub async fn send(
    sim: &Simulator,
    method: Method,
    uri: &str,
    token: Option<&str>,
    body: Value,
) -> Response<Bytes> {
    sim.handle(request(method, uri, token, Some(body)), PEER)
        .await
}

pub async fn graphql(sim: &Simulator, token: &str, query: &str) -> Response<Bytes> {
    send(
        sim,
        Method::POST,
        "/graphql",
        Some(token),
        serde_json::json!({ "query": query }),
    )
    .await
}

pub fn json(resp: &Response<Bytes>) -> Value {
    serde_json::from_slice(resp.body()).expect("the body is JSON")
}

pub fn header<'a>(resp: &'a Response<Bytes>, name: &str) -> Option<&'a str> {
    resp.headers().get(name).and_then(|v| v.to_str().ok())
}

pub fn num(resp: &Response<Bytes>, name: &str) -> i64 {
    header(resp, name)
        .unwrap_or_else(|| panic!("header {name} missing"))
        .parse()
        .expect("numeric header")
}
