//! The URL policy: the SSRF boundary of every provider request.
//!
//! The API host is configuration, never something a response can change. A URL is sent only
//! if it is https (plain http only to a loopback API the operator configured, such as the
//! simulator), names exactly the configured host and port, carries no userinfo, and is not an
//! IP literal (except that configured loopback). Redirect targets are checked by the same
//! rules, hop by hop; pre-signed download hosts are a separate, explicit list and are fetched
//! without credentials.

use std::net::IpAddr;

use url::{Host, Url};

/// Why a URL was refused. The message names the rule, never the credential.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The text is not a URL.
    #[error("not a valid URL: {0}")]
    Invalid(String),
    /// Not https (and not the configured loopback http API).
    #[error("refused scheme `{scheme}`: only https is allowed")]
    Scheme {
        /// The scheme.
        scheme: String,
    },
    /// Another host than the configured API host.
    #[error("refused host `{host}`: only the configured API host `{allowed}` is allowed")]
    Host {
        /// The host asked for.
        host: String,
        /// The configured host.
        allowed: String,
    },
    /// user:password@ in the URL.
    #[error("refused URL with userinfo")]
    Userinfo,
    /// A port other than the configured one.
    #[error("refused port {port}: only the configured port is allowed")]
    Port {
        /// The port asked for.
        port: u16,
    },
    /// An IP literal other than the configured loopback.
    #[error("refused IP literal `{0}`")]
    IpLiteral(String),
    /// Outside the configured API path (GitHub Enterprise's `/api/v3`).
    #[error("refused path `{path}`: outside the API base `{base}`")]
    Path {
        /// The path asked for.
        path: String,
        /// The configured base path.
        base: String,
    },
    /// The configured API URL itself is unacceptable.
    #[error("invalid API URL: {0}")]
    Config(String),
}

/// The rules for one configured API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlPolicy {
    base: Url,
    host: String,
    port: Option<u16>,
    loopback_http: bool,
    download_hosts: Vec<String>,
}

fn is_loopback_host(host: &Host<&str>) -> bool {
    match host {
        Host::Ipv4(ip) => ip.is_loopback(),
        Host::Ipv6(ip) => ip.is_loopback(),
        Host::Domain(d) => d.eq_ignore_ascii_case("localhost"),
    }
}

impl UrlPolicy {
    /// The policy for an API base URL (`https://api.github.com`,
    /// `https://ghe.example.com/api/v3`, or a loopback simulator `http://127.0.0.1:PORT`).
    pub fn for_api_url(api_url: &str) -> Result<Self, PolicyError> {
        let base = Url::parse(api_url.trim()).map_err(|e| PolicyError::Config(format!("{e}")))?;
        let host = base
            .host()
            .ok_or_else(|| PolicyError::Config("the API URL has no host".into()))?;
        let loopback = is_loopback_host(&host);
        match base.scheme() {
            "https" => {}
            "http" if loopback => {}
            other => {
                return Err(PolicyError::Config(format!(
                    "scheme `{other}` is not allowed: use https (plain http only for a loopback address)"
                )));
            }
        }
        if !base.username().is_empty() || base.password().is_some() {
            return Err(PolicyError::Config(
                "the API URL must not contain userinfo".into(),
            ));
        }
        if matches!(host, Host::Ipv4(_) | Host::Ipv6(_)) && !loopback {
            return Err(PolicyError::Config(
                "the API URL must name a host, not an IP address (loopback excepted)".into(),
            ));
        }
        if base.query().is_some() || base.fragment().is_some() {
            return Err(PolicyError::Config(
                "the API URL must not have a query or fragment".into(),
            ));
        }
        let host = host.to_string().to_ascii_lowercase();
        let port = base.port();
        let mut base = base;
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        Ok(Self {
            host,
            port,
            loopback_http: loopback && base.scheme() == "http",
            base,
            download_hosts: Vec::new(),
        })
    }

    /// Also allows pre-signed downloads from these hosts (https only, no credentials sent).
    pub fn with_download_hosts(mut self, hosts: &[&str]) -> Self {
        self.download_hosts = hosts.iter().map(|h| h.to_ascii_lowercase()).collect();
        self
    }

    /// The configured API base URL (always ending in `/`).
    pub fn base(&self) -> &Url {
        &self.base
    }

    /// The configured API host, as the quota key's host.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Resolves an API path (`/repos/o/r`, `repos/o/r?page=2`) or an absolute URL against the
    /// base, then checks it.
    pub fn resolve(&self, path_or_url: &str) -> Result<Url, PolicyError> {
        let url = if path_or_url.contains("://") {
            Url::parse(path_or_url).map_err(|e| PolicyError::Invalid(format!("{e}")))?
        } else {
            self.base
                .join(path_or_url.trim_start_matches('/'))
                .map_err(|e| PolicyError::Invalid(format!("{e}")))?
        };
        self.check_api(&url)?;
        Ok(url)
    }

    /// Whether `url` may be sent with credentials to the API.
    pub fn check_api(&self, url: &Url) -> Result<(), PolicyError> {
        if !url.username().is_empty() || url.password().is_some() {
            return Err(PolicyError::Userinfo);
        }
        let scheme_ok = url.scheme() == "https" || (self.loopback_http && url.scheme() == "http");
        if !scheme_ok {
            return Err(PolicyError::Scheme {
                scheme: url.scheme().to_owned(),
            });
        }
        let Some(host) = url.host() else {
            return Err(PolicyError::Invalid("no host".into()));
        };
        let host_text = host.to_string().to_ascii_lowercase();
        if host_text != self.host {
            if matches!(host, Host::Ipv4(_) | Host::Ipv6(_)) {
                return Err(PolicyError::IpLiteral(host_text));
            }
            return Err(PolicyError::Host {
                host: host_text,
                allowed: self.host.clone(),
            });
        }
        if url.port() != self.port
            && let Some(port) = url.port().or_else(|| url.port_or_known_default())
        {
            return Err(PolicyError::Port { port });
        }
        if !url.path().starts_with(self.base.path())
            && url.path() != self.base.path().trim_end_matches('/')
        {
            return Err(PolicyError::Path {
                path: url.path().to_owned(),
                base: self.base.path().to_owned(),
            });
        }
        Ok(())
    }

    /// Whether `url` is an allowed pre-signed download (fetched without credentials).
    pub fn check_download(&self, url: &Url) -> Result<(), PolicyError> {
        if !url.username().is_empty() || url.password().is_some() {
            return Err(PolicyError::Userinfo);
        }
        if url.scheme() != "https" {
            return Err(PolicyError::Scheme {
                scheme: url.scheme().to_owned(),
            });
        }
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        if host.parse::<IpAddr>().is_ok() || host.starts_with('[') {
            return Err(PolicyError::IpLiteral(host));
        }
        if url.port().is_some() {
            return Err(PolicyError::Port {
                port: url.port().unwrap_or_default(),
            });
        }
        if self.download_hosts.contains(&host) {
            Ok(())
        } else {
            Err(PolicyError::Host {
                host,
                allowed: self.download_hosts.join(", "),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn github() -> UrlPolicy {
        UrlPolicy::for_api_url("https://api.github.com").expect("valid")
    }

    #[test]
    fn accepts_the_configured_api() {
        let p = github();
        assert_eq!(p.host(), "api.github.com");
        for ok in [
            "/repos/o/r",
            "repos/o/r?per_page=100&page=2",
            "https://api.github.com/repositories/42/issues?page=3",
            "https://API.GitHub.com/events",
            "https://api.github.com:443/user",
        ] {
            assert!(p.resolve(ok).is_ok(), "{ok}");
        }
    }

    /// Whether an error is of the expected kind.
    type Expect = fn(&PolicyError) -> bool;

    #[test]
    fn refuses_hostile_urls() {
        let p = github();
        let cases: [(&str, Expect); 9] = [
            ("http://api.github.com/user", |e| {
                matches!(e, PolicyError::Scheme { .. })
            }),
            ("https://evil.example/user", |e| {
                matches!(e, PolicyError::Host { .. })
            }),
            ("https://api.github.com.evil.example/user", |e| {
                matches!(e, PolicyError::Host { .. })
            }),
            ("https://user:pw@api.github.com/user", |e| {
                matches!(e, PolicyError::Userinfo)
            }),
            ("https://api.github.com:8443/user", |e| {
                matches!(e, PolicyError::Port { .. })
            }),
            ("https://169.254.169.254/latest/meta-data", |e| {
                matches!(e, PolicyError::IpLiteral(_))
            }),
            ("https://127.0.0.1/user", |e| {
                matches!(e, PolicyError::IpLiteral(_))
            }),
            ("https://[::1]/user", |e| {
                matches!(e, PolicyError::IpLiteral(_))
            }),
            ("file:///etc/passwd", |e| {
                matches!(e, PolicyError::Scheme { .. })
            }),
        ];
        for (url, expected) in cases {
            let err = p.resolve(url).expect_err(url);
            assert!(expected(&err), "{url}: {err}");
        }
    }

    #[test]
    fn enterprise_base_path_is_enforced() {
        let p = UrlPolicy::for_api_url("https://ghe.example.com/api/v3").expect("valid");
        assert_eq!(
            p.resolve("/repos/o/r").expect("ok").as_str(),
            "https://ghe.example.com/api/v3/repos/o/r"
        );
        assert!(matches!(
            p.resolve("https://ghe.example.com/admin/secret"),
            Err(PolicyError::Path { .. })
        ));
    }

    #[test]
    fn loopback_http_only_when_configured() {
        let p = UrlPolicy::for_api_url("http://127.0.0.1:8080").expect("valid");
        assert!(p.resolve("/user").is_ok());
        assert!(matches!(
            p.resolve("http://127.0.0.1:9090/user"),
            Err(PolicyError::Port { .. })
        ));
        assert!(p.resolve("http://127.0.0.2:8080/user").is_err());
        assert!(p.resolve("http://localhost:8080/user").is_err());
        for bad in [
            "http://api.github.com",
            "https://10.0.0.1",
            "ftp://127.0.0.1",
            "https://u:p@api.github.com",
            "https://api.github.com/?x=1",
            "not a url",
        ] {
            assert!(UrlPolicy::for_api_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn downloads_are_a_separate_list() {
        let p = github().with_download_hosts(&["objects.githubusercontent.com"]);
        let ok = Url::parse("https://objects.githubusercontent.com/x?sig=abc").expect("url");
        assert!(p.check_download(&ok).is_ok());
        // A download host is not an API host, and vice versa.
        assert!(p.check_api(&ok).is_err());
        let api = Url::parse("https://api.github.com/x").expect("url");
        assert!(p.check_download(&api).is_err());
        let ip = Url::parse("https://10.1.2.3/x").expect("url");
        assert!(p.check_download(&ip).is_err());
    }

    #[test]
    fn a_gitlab_base_under_api_v4_is_accepted_and_bounds_the_paths() {
        for base in [
            "https://gitlab.com/api/v4",
            "https://git.example.org/api/v4/",
        ] {
            let p = UrlPolicy::for_api_url(base).expect("a GitLab base URL");
            let url = p
                .resolve("/projects/alice%2Fwidgets/repository/branches?per_page=100")
                .expect("inside the base");
            assert!(
                url.path()
                    .ends_with("/api/v4/projects/alice%2Fwidgets/repository/branches")
            );
            let outside = Url::parse(&format!("https://{}/api/v3/user", p.host())).expect("url");
            assert!(matches!(
                p.check_api(&outside),
                Err(PolicyError::Path { .. })
            ));
        }
        let sim = UrlPolicy::for_api_url("http://127.0.0.1:7000/api/v4").expect("loopback");
        assert!(
            sim.resolve("/user")
                .expect("inside")
                .as_str()
                .ends_with("/api/v4/user")
        );
    }
}
