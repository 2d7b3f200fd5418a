//! The hosts the server may fetch remote sources from: the operator's allow-list
//! (`--source-host`). A pull request writes the URL, so without it a source could make
//! the server call any address it can reach: a cloud's metadata service
//! (`169.254.169.254`), its own loopback, a private network. Nothing is allowed that is
//! not listed (the served forge is allowed by `catalog`, with its own credential).
//!
//! Owns: reading the list and matching a URL against it. Never: resolves names (a listed
//! name is the operator's word), or allows a scheme the entry does not name.

use anyhow::{Context, bail};
use url::Url;

/// `--source-host` values.
#[derive(Clone, Debug, Default)]
pub struct SourceHosts {
    entries: Vec<Entry>,
}

/// One listed host: with a scheme, that scheme only; without one, https and ssh.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    scheme: Option<String>,
    host: String,
    port: Option<u16>,
}

impl SourceHosts {
    /// Reads `github.com`, `git.example.com:8443`, `https://git.example.com`,
    /// `http://10.0.0.5:3000` (plain http only when written so).
    pub fn parse(values: &[String]) -> anyhow::Result<SourceHosts> {
        let entries = values
            .iter()
            .map(|value| entry(value))
            .collect::<anyhow::Result<_>>()?;
        Ok(SourceHosts { entries })
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `url` is at a listed host, with a scheme and port the entry allows.
    pub fn allows(&self, url: &Url) -> bool {
        let Some(host) = url.host_str().map(normal_host) else {
            return false;
        };
        let port = url.port_or_known_default().or(match url.scheme() {
            "ssh" => Some(22),
            _ => None,
        });
        self.entries.iter().any(|e| {
            let scheme_ok = match &e.scheme {
                Some(scheme) => scheme == url.scheme(),
                None => matches!(url.scheme(), "https" | "ssh"),
            };
            let port_ok = match e.port {
                Some(listed) => port == Some(listed),
                None => port == default_port(url.scheme()),
            };
            scheme_ok && port_ok && e.host == host
        })
    }
}

fn entry(value: &str) -> anyhow::Result<Entry> {
    let why = || {
        format!(
            "--source-host {value:?} is not a host: write `github.com`, `git.example.com:8443` or `https://git.example.com`"
        )
    };
    let (scheme, url) = match value.split_once("://") {
        Some((scheme, _)) => (Some(scheme.to_ascii_lowercase()), value.to_string()),
        None => (None, format!("https://{value}")),
    };
    if let Some(scheme) = &scheme
        && !matches!(scheme.as_str(), "https" | "http" | "ssh")
    {
        bail!("--source-host {value:?}: cascade fetches sources over https, http and ssh");
    }
    let parsed = Url::parse(&url).with_context(why)?;
    let host = parsed.host_str().map(normal_host).with_context(why)?;
    if !matches!(parsed.path(), "" | "/")
        || parsed.query().is_some()
        || !parsed.username().is_empty()
    {
        bail!("{}; a host takes no path, query or user", why());
    }
    Ok(Entry {
        scheme,
        host,
        port: parsed.port(),
    })
}

/// Lower case, without the trailing dot of a fully qualified name.
fn normal_host(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "https" => Some(443),
        "http" => Some(80),
        "ssh" => Some(22),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(values: &[&str]) -> SourceHosts {
        SourceHosts::parse(&values.iter().map(|v| v.to_string()).collect::<Vec<_>>()).unwrap()
    }

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn a_listed_host_is_allowed_over_https_and_ssh_and_nothing_else_is() {
        let list = hosts(&[
            "github.com",
            "GIT.example.com.:8443",
            "http://10.0.0.5:3000",
        ]);
        for allowed in [
            "https://github.com/acme/catalog.git",
            "https://GitHub.com./acme/catalog.git",
            "ssh://git@github.com/acme/catalog.git",
            "https://git.example.com:8443/x.git",
            "http://10.0.0.5:3000/x.git",
        ] {
            assert!(list.allows(&url(allowed)), "{allowed}");
        }
        for refused in [
            "http://github.com/acme/catalog.git",
            "https://github.com:8443/acme/catalog.git",
            "https://api.github.com/x",
            "https://github.com.evil.example/x",
            "https://git.example.com/x.git",
            "https://10.0.0.5:3000/x.git",
            "http://169.254.169.254/latest/meta-data",
            "http://127.0.0.1:8080/x.git",
            "http://[::1]:8080/x.git",
            "http://2130706433/x.git",
            "http://0x7f.1/x.git",
            "file:///etc/x",
        ] {
            assert!(!list.allows(&url(refused)), "{refused}");
        }
        assert!(!SourceHosts::default().allows(&url("https://github.com/a/b")));
    }

    #[test]
    fn a_loopback_address_is_allowed_only_when_listed_as_such() {
        let list = hosts(&["http://127.0.0.1:8080"]);
        // The url crate reads IPv4 spelled otherwise as the address it is.
        assert!(list.allows(&url("http://2130706433:8080/x.git")));
        assert!(!list.allows(&url("http://127.0.0.1:8081/x.git")));
        assert!(!list.allows(&url("http://localhost:8080/x.git")));
    }

    #[test]
    fn an_entry_that_is_not_a_host_is_refused_with_its_form() {
        for bad in [
            "",
            "https://",
            "github.com/acme",
            "ftp://x",
            "bob@github.com",
            "a b",
        ] {
            let err = SourceHosts::parse(&[bad.to_string()])
                .unwrap_err()
                .to_string();
            assert!(err.contains("--source-host"), "{bad}: {err}");
        }
    }
}
