//! The documents a workspace sync sends, against the simulated Linear: each is accepted and
//! answered, and the complexity estimated before sending equals what the simulator charged
//! (`X-Complexity`), both following Linear's documented rule. A document the simulator's
//! schema subset lacks a field for would be refused here before a sync is built on it.

#![allow(clippy::expect_used)]

use bytes::Bytes;
use headroom_core::clock::{Timestamp, TokioClock};
use headroom_linear::{complexity, documents};
use headroom_sim::{LinearWorkspaceSpec, SimConfig, Simulator, TokenSpec};
use serde_json::{Value, json};

async fn post(sim: &Simulator, body: &Value) -> (u16, Option<u64>, Value) {
    let request = http::Request::post("/linear/graphql")
        .header("authorization", "lin_api_alice")
        .header("content-type", "application/json")
        .body(Bytes::from(body.to_string()))
        .expect("a request");
    let response = sim.handle(request, [127, 0, 0, 1].into()).await;
    let charged = response
        .headers()
        .get("x-complexity")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let json = serde_json::from_slice(response.body()).expect("a JSON answer");
    (response.status().as_u16(), charged, json)
}

#[tokio::test]
async fn every_document_is_answered_and_charged_what_was_estimated() {
    let clock = TokioClock::anchored_at(Timestamp::from_second(1_800_000_000).expect("valid"));
    let config = SimConfig::default()
        .with_token(TokenSpec::user("lin_api_alice", "alice"))
        .with_linear_workspace(LinearWorkspaceSpec::new("acme").with_teams(2));
    let sim = Simulator::new(config, clock).expect("a simulator");
    // An issue to ask the history of.
    let (_, _, issues) = post(
        &sim,
        &json!({"query": documents::ISSUES.text, "variables": {"first": 1}}),
    )
    .await;
    let issue = issues["data"]["issues"]["nodes"][0]["id"]
        .as_str()
        .expect("an issue")
        .to_owned();
    for d in documents::ALL {
        let variables = json!({ "first": 5, "issue": issue, "filter": null });
        let (status, charged, body) =
            post(&sim, &json!({ "query": d.text, "variables": variables })).await;
        assert_eq!(status, 200, "{}: {body}", d.name);
        assert!(body.get("errors").is_none(), "{}: {body}", d.name);
        assert!(body["data"].is_object(), "{}: {body}", d.name);
        let estimated = complexity::estimate(d.text, &variables).expect("estimable");
        assert_eq!(charged, Some(estimated), "{}", d.name);
    }
}
