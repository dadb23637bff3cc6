//! Pagination: RFC 8288 `Link` headers and page-number parameters, both with hard page caps
//! (GitHub), and one pure pager per other provider ([`gitlab`], [`jira`], [`linear`],
//! [`launchdarkly`]) sharing one walk that stops on a repeated cursor or a foreign link.
//!
//! The `Link` parser is hand-written because real headers break naive splitting: URLs contain
//! commas, `rel` may hold several relations (`rel="next prefetch"`), `first` may be a URI
//! template (`{?since}`), cursors are opaque `after=` values, and non-paging relations with
//! their own parameters (`rel="deprecation"; type="text/html"`) appear among the paging ones.

pub mod gitlab;
pub mod jira;
pub mod launchdarkly;
pub mod linear;
mod walk;

use http::HeaderMap;
use url::Url;

/// One link-value of a `Link` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The target, as written (may be relative, may be a URI template).
    pub target: String,
    /// The relation types, lowercase.
    pub rels: Vec<String>,
    /// Other parameters, names lowercase.
    pub params: Vec<(String, String)>,
}

impl Link {
    /// Whether the link has relation `rel`.
    pub fn has_rel(&self, rel: &str) -> bool {
        self.rels.iter().any(|r| r == rel)
    }

    /// Whether the target is a URI template rather than a URL.
    pub fn is_template(&self) -> bool {
        self.target.contains('{')
    }
}

/// Parses every `Link` header (there may be several) into link-values. Malformed pieces are
/// skipped, never fatal.
pub fn parse_link_headers(headers: &HeaderMap) -> Vec<Link> {
    headers
        .get_all(http::header::LINK)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(parse_link_header)
        .collect()
}

/// Parses one `Link` header value.
pub fn parse_link_header(value: &str) -> Vec<Link> {
    let mut links = Vec::new();
    let mut rest = value;
    loop {
        rest = rest.trim_start_matches(|c: char| c == ',' || c.is_whitespace());
        if rest.is_empty() {
            break;
        }
        let Some(after_lt) = rest.strip_prefix('<') else {
            // Not a link-value start: skip to the next comma outside quotes.
            rest = skip_past_separator(rest);
            continue;
        };
        let Some(end) = after_lt.find('>') else { break };
        let target = after_lt[..end].trim().to_owned();
        rest = &after_lt[end + 1..];
        let (params, remaining) = parse_params(rest);
        rest = remaining;
        let mut rels = Vec::new();
        let mut others = Vec::new();
        for (name, value) in params {
            if name == "rel" {
                if rels.is_empty() {
                    rels = value
                        .split_whitespace()
                        .map(str::to_ascii_lowercase)
                        .collect();
                }
            } else {
                others.push((name, value));
            }
        }
        links.push(Link {
            target,
            rels,
            params: others,
        });
    }
    links
}

/// Parses `; name=value; name="quoted, value"` up to the comma that ends the link-value.
fn parse_params(mut rest: &str) -> (Vec<(String, String)>, &str) {
    let mut params = Vec::new();
    loop {
        rest = rest.trim_start();
        let Some(after) = rest.strip_prefix(';') else {
            return (params, rest);
        };
        let after = after.trim_start();
        let name_end = after
            .find(|c: char| c == '=' || c == ';' || c == ',' || c.is_whitespace())
            .unwrap_or(after.len());
        let name = after[..name_end].to_ascii_lowercase();
        rest = after[name_end..].trim_start();
        let mut value = String::new();
        if let Some(v) = rest.strip_prefix('=') {
            let v = v.trim_start();
            if let Some(quoted) = v.strip_prefix('"') {
                let mut chars = quoted.char_indices();
                let mut consumed = quoted.len();
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some((_, escaped)) = chars.next() {
                                value.push(escaped);
                            }
                        }
                        '"' => {
                            consumed = i + 1;
                            break;
                        }
                        other => value.push(other),
                    }
                }
                rest = &quoted[consumed.min(quoted.len())..];
            } else {
                let end = v.find([';', ',']).unwrap_or(v.len());
                value = v[..end].trim().to_owned();
                rest = &v[end..];
            }
        }
        if !name.is_empty() {
            params.push((name, value));
        }
    }
}

fn skip_past_separator(s: &str) -> &str {
    let mut in_quotes = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => in_quotes = !in_quotes,
            ',' if !in_quotes => return &s[i + 1..],
            _ => {}
        }
    }
    ""
}

/// The `next` page's URL, resolved against the URL that was fetched. Templates are ignored.
pub fn next_page(headers: &HeaderMap, current: &Url) -> Option<Url> {
    parse_link_headers(headers)
        .into_iter()
        .find(|l| l.has_rel("next") && !l.is_template())
        .and_then(|l| current.join(&l.target).ok())
}

/// Why a pagination stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The provider said there is no next page.
    LastPage,
    /// The hard page cap was reached with more pages available.
    PageCap,
    /// A page came back shorter than a full page (page-number pagination).
    ShortPage,
    /// The next page pointed back at one already fetched (a cursor, token, page number or
    /// link that repeats): following it would loop.
    RepeatedCursor,
    /// The next link leaves the first request's scheme, host, port or path.
    ForeignLink,
    /// The answer could not be read as a page: paging fields missing, of the wrong type, or
    /// contradicting each other.
    Malformed,
}

/// Follows `Link: rel="next"` up to a hard cap.
#[derive(Debug, Clone)]
pub struct LinkPager {
    next: Option<Url>,
    fetched: u32,
    cap: u32,
    stop: Option<StopReason>,
}

impl LinkPager {
    /// Starts at `first`, fetching at most `cap` pages.
    pub fn new(first: Url, cap: u32) -> Self {
        Self {
            next: Some(first),
            fetched: 0,
            cap,
            stop: None,
        }
    }

    /// The URL of the next page to fetch, or `None` when done.
    pub fn next_url(&mut self) -> Option<Url> {
        if self.fetched >= self.cap {
            if self.next.is_some() && self.stop.is_none() {
                self.stop = Some(StopReason::PageCap);
            }
            return None;
        }
        self.next.clone()
    }

    /// Records the fetched page's headers; `fetched_url` is the URL actually fetched.
    pub fn record(&mut self, fetched_url: &Url, headers: &HeaderMap) {
        self.fetched += 1;
        self.next = next_page(headers, fetched_url);
        if self.next.is_none() {
            self.stop = Some(StopReason::LastPage);
        } else if self.fetched >= self.cap {
            self.stop = Some(StopReason::PageCap);
        }
    }

    /// Pages fetched so far.
    pub fn pages_fetched(&self) -> u32 {
        self.fetched
    }

    /// Why it stopped, once it has.
    pub fn stop_reason(&self) -> Option<StopReason> {
        self.stop
    }
}

/// Page-number pagination (`?page=N&per_page=M`) up to a hard cap.
#[derive(Debug, Clone)]
pub struct PageNumberPager {
    base: Url,
    per_page: u32,
    page: u32,
    cap: u32,
    stop: Option<StopReason>,
}

impl PageNumberPager {
    /// Starts at page 1 of `base` with `per_page` items per page, at most `cap` pages.
    pub fn new(base: Url, per_page: u32, cap: u32) -> Self {
        Self {
            base,
            per_page: per_page.clamp(1, 100),
            page: 1,
            cap,
            stop: None,
        }
    }

    /// The next page's URL, or `None` when done.
    pub fn next_url(&mut self) -> Option<Url> {
        if self.stop.is_some() {
            return None;
        }
        if self.page > self.cap {
            self.stop = Some(StopReason::PageCap);
            return None;
        }
        let mut url = self.base.clone();
        let kept: Vec<(String, String)> = url
            .query_pairs()
            .filter(|(k, _)| k != "page" && k != "per_page")
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        url.query_pairs_mut()
            .clear()
            .extend_pairs(kept)
            .append_pair("per_page", &self.per_page.to_string())
            .append_pair("page", &self.page.to_string());
        Some(url)
    }

    /// Records how many items the page held.
    pub fn record(&mut self, items: usize) {
        if items < self.per_page as usize {
            self.stop = Some(StopReason::ShortPage);
        }
        self.page += 1;
        if self.page > self.cap && self.stop.is_none() {
            self.stop = Some(StopReason::PageCap);
        }
    }

    /// Why it stopped, once it has.
    pub fn stop_reason(&self) -> Option<StopReason> {
        self.stop
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn h(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.append(
            http::header::LINK,
            HeaderValue::from_str(value).expect("valid"),
        );
        headers
    }

    fn base() -> Url {
        Url::parse("https://api.github.com/repositories/1/issues?page=1").expect("valid")
    }

    #[test]
    fn github_order_and_rewritten_targets() {
        let value = r#"<https://api.github.com/repositories/1300192/issues?page=4>; rel="prev", <https://api.github.com/repositories/1300192/issues?page=6>; rel="next", <https://api.github.com/repositories/1300192/issues?page=515>; rel="last", <https://api.github.com/repositories/1300192/issues?page=1>; rel="first""#;
        let links = parse_link_header(value);
        assert_eq!(links.len(), 4);
        assert_eq!(
            next_page(&h(value), &base()).map(|u| u.to_string()),
            Some("https://api.github.com/repositories/1300192/issues?page=6".into())
        );
    }

    #[test]
    fn commas_in_urls_multiple_rels_templates_and_cursors() {
        let value = r#"<https://api.github.com/search?q=a,b,c&after=Y3Vyc29yOnYyOpK5MjAyNi0,xMS0zMA%3D%3D>; rel="next prefetch", <https://api.github.com/events{?since}>; rel="first", <https://docs.github.com/changes>; rel="deprecation"; type="text/html; charset=utf-8", <https://api.github.com/x?page=9>; rel=last"#;
        let links = parse_link_header(value);
        assert_eq!(links.len(), 4, "{links:?}");
        assert!(links[0].has_rel("next") && links[0].has_rel("prefetch"));
        assert!(links[0].target.contains("q=a,b,c"));
        assert!(links[1].is_template());
        assert_eq!(
            links[2].params,
            vec![("type".to_owned(), "text/html; charset=utf-8".to_owned())]
        );
        assert!(links[3].has_rel("last"));
        let next = next_page(&h(value), &base()).expect("next");
        assert!(
            next.as_str()
                .contains("after=Y3Vyc29yOnYyOpK5MjAyNi0,xMS0zMA%3D%3D"),
            "{next}"
        );
    }

    #[test]
    fn order_does_not_matter_and_relative_targets_resolve() {
        let value = r#"<?page=3>; rel="next", </repositories/1/issues?page=1>; rel="first""#;
        assert_eq!(
            next_page(&h(value), &base()).map(|u| u.to_string()),
            Some("https://api.github.com/repositories/1/issues?page=3".into())
        );
    }

    #[test]
    fn a_template_next_is_not_followed_and_garbage_never_panics() {
        assert_eq!(
            next_page(&h(r#"<https://x/{?a}>; rel="next""#), &base()),
            None
        );
        for garbage in [
            "",
            ",,,",
            "<unterminated",
            "no brackets; rel=next",
            r#"<a>; rel="unterminated"#,
            "<a>;;;=;",
            "<>; rel=next",
        ] {
            let _ = parse_link_header(garbage);
        }
        assert_eq!(next_page(&HeaderMap::new(), &base()), None);
    }

    #[test]
    fn link_pager_caps_and_says_why() {
        let mut pager = LinkPager::new(base(), 2);
        let first = pager.next_url().expect("first page");
        pager.record(
            &first,
            &h(r#"<https://api.github.com/repositories/1/issues?page=2>; rel="next""#),
        );
        let second = pager.next_url().expect("second page");
        pager.record(
            &second,
            &h(r#"<https://api.github.com/repositories/1/issues?page=3>; rel="next""#),
        );
        assert_eq!(pager.next_url(), None);
        assert_eq!(pager.stop_reason(), Some(StopReason::PageCap));
        assert_eq!(pager.pages_fetched(), 2);

        let mut pager = LinkPager::new(base(), 5);
        let first = pager.next_url().expect("first page");
        pager.record(&first, &HeaderMap::new());
        assert_eq!(pager.next_url(), None);
        assert_eq!(pager.stop_reason(), Some(StopReason::LastPage));
    }

    #[test]
    fn page_number_pager() {
        let mut pager = PageNumberPager::new(
            Url::parse("https://api.github.com/orgs/acme/repos?type=all&page=7").expect("url"),
            100,
            3,
        );
        let u1 = pager.next_url().expect("page 1");
        assert_eq!(u1.query(), Some("type=all&per_page=100&page=1"));
        pager.record(100);
        let u2 = pager.next_url().expect("page 2");
        assert!(u2.as_str().ends_with("page=2"));
        pager.record(40);
        assert_eq!(pager.next_url(), None);
        assert_eq!(pager.stop_reason(), Some(StopReason::ShortPage));
        let mut capped = PageNumberPager::new(base(), 10, 1);
        assert!(capped.next_url().is_some());
        capped.record(10);
        assert_eq!(capped.next_url(), None);
        assert_eq!(capped.stop_reason(), Some(StopReason::PageCap));
    }
}
