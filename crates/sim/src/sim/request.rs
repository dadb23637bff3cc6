//! A request as the routes see it ([`Ctx`]), what a route answers ([`Reply`]), and the
//! classification of a request by the limits it meets.

use bytes::Bytes;
use headroom_core::clock::Timestamp;
use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Method, StatusCode};
use serde_json::{Value, json};

use crate::quota::{Resource, Subject};

/// What a route produced, before the common headers are added.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    /// Offer an ETag and answer 304 to a matching If-None-Match.
    pub(crate) etag: bool,
}

impl Reply {
    pub(crate) fn json(status: StatusCode, v: &Value) -> Reply {
        Reply::raw_json(status, serde_json::to_vec(v).unwrap_or_default())
    }

    pub(crate) fn raw_json(status: StatusCode, body: Vec<u8>) -> Reply {
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json; charset=utf-8"),
        );
        Reply {
            status,
            headers,
            body: Bytes::from(body),
            etag: false,
        }
    }

    pub(crate) fn ok(v: &Value) -> Reply {
        let mut r = Reply::json(StatusCode::OK, v);
        r.etag = true;
        r
    }

    pub(crate) fn message(status: StatusCode, message: &str, doc: &str) -> Reply {
        Reply::json(
            status,
            &json!({"message": message, "documentation_url": doc, "status": status.as_u16().to_string()}),
        )
    }

    pub(crate) fn not_found() -> Reply {
        Reply::message(
            StatusCode::NOT_FOUND,
            "Not Found",
            "https://docs.github.com/rest",
        )
    }

    pub(crate) fn header(mut self, name: &'static str, value: &str) -> Reply {
        if let Ok(v) = HeaderValue::from_str(value) {
            self.headers.insert(HeaderName::from_static(name), v);
        }
        self
    }
}

/// A parsed request, as routes see it.
#[derive(Debug)]
pub(crate) struct Ctx {
    pub(crate) method: Method,
    pub(crate) segments: Vec<String>,
    pub(crate) query: Vec<(String, String)>,
    pub(crate) raw_query: Option<String>,
    pub(crate) base: String,
    pub(crate) subject: Subject,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    pub(crate) request_id: String,
    pub(crate) now: Timestamp,
}

impl Ctx {
    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

pub(super) fn percent_decode(s: &str) -> String {
    let replaced = s.replace('+', " ");
    percent_encoding::percent_decode_str(&replaced)
        .decode_utf8_lossy()
        .into_owned()
}

/// A path's non-empty segments, percent-decoded.
pub(crate) fn path_segments(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|s| !s.is_empty())
        .map(percent_decode)
        .collect()
}

pub(crate) fn parse_query(q: Option<&str>) -> Vec<(String, String)> {
    q.unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (percent_decode(k), percent_decode(v)),
            None => (percent_decode(p), String::new()),
        })
        .collect()
}

/// Which bucket a route spends, and how the secondary limits see it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Class {
    pub(super) resource: Resource,
    pub(super) free: bool,
    pub(super) graphql: bool,
    pub(super) creates_content: bool,
}

pub(super) fn classify(method: &Method, segments: &[String]) -> Class {
    let seg: Vec<&str> = segments.iter().map(String::as_str).collect();
    let mut c = Class {
        resource: Resource::Core,
        free: false,
        graphql: false,
        creates_content: false,
    };
    match seg.as_slice() {
        ["rate_limit"] => c.free = true,
        ["search", "code"] => c.resource = Resource::CodeSearch,
        ["search", ..] => c.resource = Resource::Search,
        ["graphql"] => {
            c.resource = Resource::Graphql;
            c.graphql = true;
        }
        _ => {}
    }
    let write = !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    let protection = seg.last() == Some(&"protection");
    if write && !c.graphql && !protection {
        c.creates_content = true;
    }
    c
}
