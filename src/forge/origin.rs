//! Where cascade's forge credentials may go: the configured forge's git origin (scheme,
//! host and port), and the clone URLs and credentials that carry it. A clone URL over
//! HTTP(S) exists only as the forge's API answered it and only at that origin
//! ([`GitOrigin::clone_url`]), so a string from a webhook payload cannot reach `git fetch`;
//! a credential knows its origin, and `workspace` sends it nowhere else.
//!
//! Owns: deriving the git origin from `--github-api-url` / `--gitlab-url`, and the checks
//! on a clone URL. Must never: accept a URL carrying credentials of its own, or show a
//! token in `Debug` or a message.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure};
use url::Url;

/// A forge's web and git origin: `https://github.com`, `https://ghe.example`,
/// `https://gitlab.example.com:8443`. Two origins are equal when scheme, host and port
/// (the scheme's default filled in) are.
#[derive(Clone, PartialEq, Eq)]
pub struct GitOrigin(url::Origin);

impl GitOrigin {
    /// The git origin of the GitHub whose REST API is `api_url`: `https://github.com` for
    /// `https://api.github.com`, `https://HOST` for GitHub Enterprise's
    /// `https://HOST/api/v3`, and the API URL's own origin otherwise (a proxy or a test's
    /// fake serving both at one address).
    pub fn for_github_api(api_url: &str) -> anyhow::Result<GitOrigin> {
        let url = http_url(api_url, "--github-api-url")?;
        if url.host_str() == Some("api.github.com") {
            return Ok(GitOrigin(
                Url::parse("https://github.com").expect("a URL").origin(),
            ));
        }
        Ok(GitOrigin(url.origin()))
    }

    /// The origin of the GitLab instance whose root is `url` (`--gitlab-url`): GitLab
    /// serves its API, web pages and repositories there.
    pub fn for_gitlab(url: &str) -> anyhow::Result<GitOrigin> {
        Ok(GitOrigin(http_url(url, "--gitlab-url")?.origin()))
    }

    /// Whether `url` is an http(s) URL at this origin.
    pub fn holds(&self, url: &str) -> bool {
        Url::parse(url).is_ok_and(|u| u.origin() == self.0)
    }

    /// This origin as text: `https://github.com`, `http://127.0.0.1:8080`.
    pub fn serialized(&self) -> String {
        self.0.ascii_serialization()
    }

    /// The origin of `url` as text (`https://host:port`), for a message; `None` when it
    /// is not a URL with a host.
    pub fn of(url: &str) -> Option<String> {
        let origin = Url::parse(url).ok()?.origin();
        origin.is_tuple().then(|| origin.ascii_serialization())
    }

    /// `answered` (what the forge's API gave as the repository's clone URL) as a
    /// [`CloneUrl`], when it is an http(s) URL at this origin with no credentials, query
    /// or fragment of its own. Anything else is refused with a message naming both
    /// origins: cascade would send its token there.
    pub fn clone_url(&self, answered: &str) -> anyhow::Result<CloneUrl> {
        let url = Url::parse(answered).map_err(|_| {
            anyhow::anyhow!(
                "the forge answered a clone URL that is not a URL; cascade fetches only from {self}"
            )
        })?;
        ensure!(
            matches!(url.scheme(), "https" | "http")
                && url.username().is_empty()
                && url.password().is_none()
                && url.query().is_none()
                && url.fragment().is_none(),
            "the forge answered a clone URL cascade does not fetch from (not plain http(s), or \
             with credentials in it); cascade fetches only from {self}"
        );
        let origin = url.origin();
        if origin != self.0 {
            bail!(
                "the forge answered a clone URL at {}, not at the configured origin {self}: \
                 cascade sends its credentials only to {self}. If the forge is reached under \
                 another name, set --github-api-url or --gitlab-url to the address it answers with",
                origin.ascii_serialization()
            );
        }
        Ok(CloneUrl(Source::Http(url)))
    }
}

impl fmt::Display for GitOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.ascii_serialization())
    }
}

impl fmt::Debug for GitOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GitOrigin({self})")
    }
}

/// An http(s) URL with a host and no credentials: a configured forge address.
fn http_url(text: &str, flag: &str) -> anyhow::Result<Url> {
    let url = Url::parse(text.trim())
        .map_err(|_| anyhow::anyhow!("{flag} {text:?} is not a URL, like https://HOST"))?;
    ensure!(
        matches!(url.scheme(), "https" | "http")
            && url.host_str().is_some()
            && url.username().is_empty()
            && url.password().is_none(),
        "{flag} must be an http(s) URL without credentials, like https://HOST"
    );
    Ok(url)
}

/// Where `git fetch` reads a repository from: an http(s) URL at a forge's origin (only
/// as the forge's API answered it, see [`GitOrigin::clone_url`]), or a local directory
/// (the CLI, tests).
#[derive(Clone, PartialEq, Eq)]
pub struct CloneUrl(Source);

#[derive(Clone, PartialEq, Eq)]
enum Source {
    Http(Url),
    Local(PathBuf),
}

impl CloneUrl {
    /// A repository in the local directory `path`, which must be absolute (git reads a
    /// relative one against its working directory, and one starting with `-` as an option).
    pub fn local(path: impl AsRef<Path>) -> anyhow::Result<CloneUrl> {
        let path = path.as_ref();
        ensure!(
            path.is_absolute() && !path.to_string_lossy().chars().any(char::is_control),
            "a local repository must be an absolute path without control characters: {}",
            path.display()
        );
        Ok(CloneUrl(Source::Local(path.to_path_buf())))
    }

    /// The origin an http(s) URL is at; `None` for a local directory.
    pub fn origin(&self) -> Option<GitOrigin> {
        match &self.0 {
            Source::Http(url) => Some(GitOrigin(url.origin())),
            Source::Local(_) => None,
        }
    }

    /// What git is given.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Source::Http(url) => url.as_str(),
            Source::Local(path) => path.to_str().unwrap_or_default(),
        }
    }
}

impl fmt::Display for CloneUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Source::Http(url) => f.write_str(url.as_str()),
            Source::Local(path) => write!(f, "{}", path.display()),
        }
    }
}

impl fmt::Debug for CloneUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CloneUrl({self})")
    }
}

/// The token `git fetch` sends (HTTP Basic, user `x-access-token`: GitHub's rule for an
/// installation token; GitLab takes any user with the token as password), and the one
/// origin it may be sent to. `Debug` never shows the token.
#[derive(Clone)]
pub struct GitCredential {
    origin: GitOrigin,
    token: String,
}

impl GitCredential {
    pub fn new(origin: GitOrigin, token: impl Into<String>) -> GitCredential {
        GitCredential {
            origin,
            token: token.into(),
        }
    }

    /// Where the token may go.
    pub fn origin(&self) -> &GitOrigin {
        &self.origin
    }

    /// The token, for `http.extraHeader`: only ever sent to [`GitCredential::origin`].
    pub fn token(&self) -> &str {
        &self.token
    }
}

impl fmt::Debug for GitCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitCredential")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn githubs_git_origin_is_derived_from_its_api() {
        let origin = |api| GitOrigin::for_github_api(api).unwrap().to_string();
        assert_eq!(origin("https://api.github.com"), "https://github.com");
        assert_eq!(origin("https://api.github.com/"), "https://github.com");
        assert_eq!(origin("https://ghe.example/api/v3"), "https://ghe.example");
        assert_eq!(
            origin("https://ghe.example:8443/api/v3/"),
            "https://ghe.example:8443"
        );
        assert_eq!(origin("http://127.0.0.1:9000"), "http://127.0.0.1:9000");
        for bad in [
            "api.github.com",
            "ftp://x",
            "https://u:p@ghe.example/api/v3",
        ] {
            assert!(GitOrigin::for_github_api(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_clone_url_must_be_at_the_origin() {
        let github = GitOrigin::for_github_api("https://api.github.com").unwrap();
        let url = github
            .clone_url("https://github.com/acme/infra.git")
            .unwrap();
        assert_eq!(url.as_str(), "https://github.com/acme/infra.git");
        assert_eq!(url.origin(), Some(github.clone()));
        // The default port is the same origin; case in the host is too.
        assert!(github.clone_url("https://GitHub.com:443/a/b.git").is_ok());
        for foreign in [
            "https://evil.example/acme/infra.git",
            "http://github.com/acme/infra.git",
            "https://github.com:444/acme/infra.git",
            "https://github.com.evil.example/acme/infra.git",
            "https://x-access-token:t@github.com/acme/infra.git",
            "https://github.com/acme/infra.git?x=1",
            "file:///srv/repo.git",
            "ext::sh -c true",
            "/srv/repo.git",
        ] {
            let err = github.clone_url(foreign).unwrap_err().to_string();
            assert!(err.contains("https://github.com"), "{foreign}: {err}");
            assert!(!err.contains("x-access-token:t"), "{err}");
        }
        let gitlab = GitOrigin::for_gitlab("https://gitlab.example.com:8443/").unwrap();
        assert!(gitlab.holds("https://gitlab.example.com:8443/g/p.git"));
        assert!(!gitlab.holds("https://gitlab.example.com/g/p.git"));
        assert_eq!(
            GitOrigin::of("https://other.example/g/p.git").as_deref(),
            Some("https://other.example")
        );
    }

    #[test]
    fn local_repositories_are_absolute_paths() {
        assert!(CloneUrl::local("/srv/origin.git").is_ok());
        assert_eq!(CloneUrl::local("/srv/origin.git").unwrap().origin(), None);
        for bad in ["--upload-pack=x", "ext::sh -c true", "relative/repo.git"] {
            assert!(CloneUrl::local(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_credential_never_shows_its_token() {
        let origin = GitOrigin::for_gitlab("https://gitlab.com").unwrap();
        let text = format!("{:?}", GitCredential::new(origin, "glpat-SECRET"));
        assert!(!text.contains("glpat-SECRET"), "{text}");
        assert!(text.contains("https://gitlab.com"), "{text}");
    }
}
