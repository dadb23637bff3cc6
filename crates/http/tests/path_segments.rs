//! Names stay inside their path segments through the exit door's URL resolution: a target
//! built with headroom-core's `provider::path` encoders resolves (WHATWG URL parsing, dot
//! segments removed) to exactly the segments it was built from, whatever the names hold.

use headroom_core::provider::path::{segment, segments};
use headroom_http::UrlPolicy;
use proptest::prelude::*;

/// Undoes `%XX` escapes.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).expect("ascii");
            out.push(u8::from_str_radix(hex, 16).expect("hex"));
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).expect("utf-8")
}

/// The resolved URL's path segments, decoded.
fn resolved(api: &str, target: &str) -> Vec<String> {
    let policy = UrlPolicy::for_api_url(api).expect("policy");
    let url = policy.resolve(target).expect("resolves");
    assert_eq!(url.query(), None, "{url}");
    assert_eq!(url.fragment(), None, "{url}");
    url.path_segments().expect("segments").map(decode).collect()
}

fn name() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            'a', 'Z', '0', '.', '/', '%', '2', 'e', 'E', '#', '?', '&', ' ', '\\', ';', ':', '@',
            '~', 'é', '\t',
        ]),
        1..16,
    )
    .prop_map(|c| c.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn an_encoded_segment_resolves_to_itself(owner in name(), repo in name(), branch in name()) {
        let (Ok(o), Ok(r), Ok(b)) = (segment(&owner), segment(&repo), segment(&branch)) else {
            // Only `.`, `..` and empty are refused, and those are exactly what a URL parser
            // would fold away.
            prop_assert!([&owner, &repo, &branch].iter().any(|s| *s == "." || *s == ".."));
            return Ok(());
        };
        let target = format!("/repos/{o}/{r}/branches/{b}/protection");
        let got = resolved("https://api.github.com", &target);
        prop_assert_eq!(got, vec!["repos".to_owned(), owner, repo, "branches".into(), branch,
            "protection".into()]);
    }

    #[test]
    fn encoded_ref_components_resolve_to_the_ref(owner in name(), branch in name()) {
        let (Ok(o), Ok(b)) = (segment(&owner), segments(&branch)) else {
            return Ok(());
        };
        let got = resolved("https://gitlab.example/api/v4", &format!("/projects/{o}/git/ref/heads/{b}"));
        let mut want = vec!["api".to_owned(), "v4".into(), "projects".into(), owner, "git".into(),
            "ref".into(), "heads".into()];
        want.extend(branch.split('/').map(str::to_owned));
        prop_assert_eq!(got, want);
    }
}

#[test]
fn an_unencoded_name_escapes_which_is_why_every_name_is_encoded() {
    // The defect the encoders exist for: the raw name walks out of its place.
    let raw =
        "/repos/alice/demo/branches/main/../../../../../orgs/acme/memberships/mallory#/protection";
    assert_eq!(resolved_unchecked(raw), "/orgs/acme/memberships/mallory");
    let encoded = format!(
        "/repos/alice/demo/branches/{}/protection",
        segment("main/../../../../../orgs/acme/memberships/mallory#").expect("encodes")
    );
    assert_eq!(resolved("https://api.github.com", &encoded).len(), 6);
}

fn resolved_unchecked(target: &str) -> String {
    let policy = UrlPolicy::for_api_url("https://api.github.com").expect("policy");
    policy.resolve(target).expect("resolves").path().to_owned()
}
