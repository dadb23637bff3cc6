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

use headroom_core::budget::SyncCaps;
use headroom_core::route::RouteFamily;
use serde::Deserialize;

use super::{ConfigError, invalid};

/// The section as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SyncCapsFile {
    #[serde(default)]
    share: BTreeMap<String, f64>,
    #[serde(default)]
    families: BTreeMap<String, u64>,
}

/// The caps, checked.
pub(super) fn sync_caps(file: Option<SyncCapsFile>) -> Result<SyncCaps, ConfigError> {
    let Some(file) = file else {
        return Ok(SyncCaps::default());
    };
    for (bucket, share) in &file.share {
        let setting = format!("sync_caps.share.{bucket}");
        if bucket.trim().is_empty() {
            return Err(invalid(
                "sync_caps.share",
                "a bucket name must not be empty",
            ));
        }
        if !(share.is_finite() && *share > 0.0 && *share <= 1.0) {
            return Err(invalid(
                &setting,
                format!("{share} is not a share of the window: more than 0, at most 1"),
            ));
        }
    }
    for (family, cap) in &file.families {
        let setting = format!("sync_caps.families.{family}");
        if RouteFamily::named(family).is_none() {
            return Err(invalid(
                &setting,
                "not a route family (docs/ROUTE-FAMILIES.md lists them)",
            ));
        }
        if *cap == 0 {
            return Err(invalid(
                &setting,
                "a cap of 0 would stop the family for good",
            ));
        }
    }
    Ok(SyncCaps {
        shares: file.share,
        families: file.families,
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
        sync_caps(doc.sync_caps)
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
