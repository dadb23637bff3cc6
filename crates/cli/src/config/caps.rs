//! `headroom.toml`'s `[sync_caps]`: what organization sync may spend of a quota window.
//!
//! ```toml
//! [sync_caps]
//! share = { core = 0.7 }              # sync takes core's window to at most 70 % of its limit
//! families = { workflow_jobs = 500 }  # at most 500 workflow_jobs requests per window
//! ```
//!
//! A bucket is named as the provider names it (`core`, `graphql`, `search`); a family as the
//! route-family catalogue does (docs/ROUTE-FAMILIES.md). A bad value refuses to start,
//! naming the setting.

use std::collections::BTreeMap;
use std::ops::Range;

use headroom_core::budget::SyncCaps;
use headroom_core::route::RouteFamily;
use serde::Deserialize;
use toml::Spanned;

use super::{ConfigError, invalid};

/// The section as written, each value with its byte span in the file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SyncCapsFile {
    #[serde(default)]
    share: BTreeMap<String, Spanned<f64>>,
    #[serde(default)]
    families: BTreeMap<String, Spanned<u64>>,
}

impl SyncCapsFile {
    /// The span of its first value in the file, if it sets any.
    pub(super) fn first_span(&self) -> Option<Range<usize>> {
        let shares = self.share.values().map(Spanned::span);
        let families = self.families.values().map(Spanned::span);
        shares.chain(families).min_by_key(|s| s.start)
    }
}

/// The caps, checked; `at` says where a span is (`PATH line N`) for a refusal.
pub(super) fn sync_caps(
    file: Option<SyncCapsFile>,
    at: &dyn Fn(&Range<usize>) -> String,
) -> Result<SyncCaps, ConfigError> {
    let Some(file) = file else {
        return Ok(SyncCaps::default());
    };
    let refuse = |setting: &str, span: Range<usize>, problem: &str| {
        invalid(setting, format!("{}: {problem}", at(&span)))
    };
    for (bucket, share) in &file.share {
        let setting = format!("sync_caps.share.{bucket}");
        if bucket.trim().is_empty() {
            return Err(refuse(
                "sync_caps.share",
                share.span(),
                "a bucket name must not be empty",
            ));
        }
        let value = *share.get_ref();
        if !(value.is_finite() && value > 0.0 && value <= 1.0) {
            return Err(refuse(
                &setting,
                share.span(),
                &format!("{value} is not a share of the window: more than 0, at most 1"),
            ));
        }
    }
    for (family, cap) in &file.families {
        let setting = format!("sync_caps.families.{family}");
        if RouteFamily::named(family).is_none() {
            return Err(refuse(
                &setting,
                cap.span(),
                "not a route family (docs/ROUTE-FAMILIES.md lists them)",
            ));
        }
        if *cap.get_ref() == 0 {
            return Err(refuse(
                &setting,
                cap.span(),
                "a cap of 0 would stop the family for good",
            ));
        }
    }
    Ok(SyncCaps {
        shares: file
            .share
            .into_iter()
            .map(|(k, v)| (k, v.into_inner()))
            .collect(),
        families: file
            .families
            .into_iter()
            .map(|(k, v)| (k, v.into_inner()))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<SyncCaps, ConfigError> {
        #[derive(Deserialize)]
        struct Doc {
            sync_caps: Option<SyncCapsFile>,
        }
        let doc: Doc = toml::from_str(text).map_err(|e| invalid("--config", e.message()))?;
        sync_caps(doc.sync_caps, &|span| format!("at {}", span.start))
    }

    #[test]
    fn caps_are_read_and_bad_ones_refused_by_name() {
        let caps = parse("[sync_caps]\nshare = { core = 0.7 }\nfamilies = { issues = 50 }\n")
            .expect("valid");
        assert_eq!(caps.shares.get("core"), Some(&0.7));
        assert_eq!(caps.families.get("issues"), Some(&50));
        assert!(parse("").expect("none").is_empty());
        for (text, setting) in [
            (
                "[sync_caps]\nshare = { core = 1.5 }",
                "sync_caps.share.core",
            ),
            ("[sync_caps]\nshare = { core = 0 }", "sync_caps.share.core"),
            (
                "[sync_caps]\nfamilies = { nonsense = 5 }",
                "sync_caps.families.nonsense",
            ),
            (
                "[sync_caps]\nfamilies = { issues = 0 }",
                "sync_caps.families.issues",
            ),
        ] {
            let e = parse(text).expect_err(text);
            assert_eq!(e.setting, setting, "{text}");
        }
        assert!(
            parse("[sync_caps]\nshares = { core = 0.5 }").is_err(),
            "unknown key"
        );
    }
}
