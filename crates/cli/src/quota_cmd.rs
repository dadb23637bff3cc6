//! `headroom quota show`: whose quota a credential spends, and what is left of it — read from
//! response headers, never from `/rate_limit` (which has been seen to report a full quota
//! while the headers said otherwise).

use std::process::ExitCode;

use clap::{Args, Subcommand};
use headroom_core::Subject;
use headroom_core::clock::{Clock, TokioClock};
use headroom_core::governor::IdentitySnapshot;
use headroom_http::{ApiError, ApiRequest};
use serde::Serialize;

use crate::config::{GlobalArgs, ProcessEnv};
use crate::{registry, wiring};

/// Quota commands.
#[derive(Debug, Args)]
pub struct QuotaArgs {
    #[command(subcommand)]
    command: QuotaCommand,
}

#[derive(Debug, Subcommand)]
enum QuotaCommand {
    /// Discover the credential's owner, make one cheap request, and print every bucket seen
    /// and which stored credentials share the quota.
    Show {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Serialize)]
struct Report {
    identity: String,
    host: String,
    authenticated: bool,
    credential_fingerprint: Option<String>,
    credentials_sharing: Vec<String>,
    snapshot: IdentitySnapshot,
}

/// Runs `headroom quota …`.
pub async fn run(global: &GlobalArgs, args: QuotaArgs) -> ExitCode {
    let QuotaCommand::Show { json } = args.command;
    let settings = match global.resolve(&ProcessEnv) {
        Ok(s) => s,
        Err(e) => return crate::refuse(&e),
    };
    let store = match registry::open(&settings.db).await {
        Ok(s) => s,
        Err(e) => return crate::refuse(&e),
    };
    let clock = TokioClock::system();
    let client = match wiring::client(&settings, clock, store.clone()) {
        Ok(c) => c,
        Err(e) => return crate::refuse(&e),
    };
    let credential = settings.credential.as_ref();
    let key = match client.identity(credential).await {
        Ok(k) => k,
        Err(e) => return crate::failed(&e),
    };
    // One cheap request whose headers tell the truth about the core bucket.
    let probe = if credential.is_some() {
        "/user"
    } else {
        "/events?per_page=1"
    };
    match client
        .send(
            ApiRequest::get(probe)
                .credential(credential)
                .route("quota_probe", headroom_core::Dimension::RestCore),
        )
        .await
    {
        Ok(_) | Err(ApiError::RateLimited { .. }) => {}
        Err(e) => return crate::failed(&e),
    }
    let snapshot = match client.governor().snapshot(&key).await {
        Ok(s) => s,
        Err(e) => return crate::failed(&e),
    };
    let sharing = client.credentials().sharing(&key.host, &key.subject).await;
    let owner = match &key.subject {
        Subject::User(login) => format!("{login}'s"),
        Subject::Installation(id) => format!("installation {id}'s"),
        Subject::Ip(ip) => format!("the unauthenticated ({ip})"),
    };
    let report = Report {
        identity: key.subject.to_string(),
        host: key.host.to_string(),
        authenticated: credential.is_some(),
        credential_fingerprint: credential.map(|c| c.fingerprint().to_owned()),
        credentials_sharing: sharing.clone(),
        snapshot,
    };
    if json {
        match serde_json::to_string_pretty(&report) {
            Ok(text) => println!("{text}"),
            Err(e) => return crate::failed(&e),
        }
        return ExitCode::SUCCESS;
    }
    println!("{} on {}", report.identity, report.host);
    let now = clock.now();
    for bucket in &report.snapshot.buckets {
        let b = &bucket.state;
        let remaining = b.remaining.map_or("?".to_owned(), |r| r.to_string());
        let limit = b.limit.map_or("?".to_owned(), |l| l.to_string());
        let reset = b.reset_at.map_or("unknown".to_owned(), |r| {
            let secs = r.duration_since(now).as_secs().max(0);
            format!(
                "{} (in {}m{:02}s)",
                r.strftime("%H:%M:%S UTC"),
                secs / 60,
                secs % 60
            )
        });
        let blocked = b
            .blocked_until
            .filter(|u| *u > now)
            .map(|u| format!(" · blocked until {}", u.strftime("%H:%M:%S UTC")))
            .unwrap_or_default();
        println!(
            "  {:<12} {remaining} / {limit} · resets {reset} · {} in flight{blocked}",
            b.bucket.as_str(),
            b.in_flight
        );
    }
    if sharing.len() >= 2 {
        println!(
            "{} credentials share {owner} quota on {}",
            sharing.len(),
            report.host
        );
    } else if credential.is_some() {
        println!("1 credential known for {owner} quota on {}", report.host);
    }
    ExitCode::SUCCESS
}
