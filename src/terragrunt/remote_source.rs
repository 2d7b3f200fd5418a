//! A remote unit or stack `source` as Terragrunt reads it (go-getter's forms), parsed
//! into what one git fetch needs: the repository to clone, the commit-ish to check out,
//! and the subdirectory inside it.
//!
//! Owns: recognising the forms Terragrunt takes (`git::https://…`, `git::ssh://…`,
//! `git::git@host:org/repo.git`, the `github.com/org/repo` and `gitlab.com/group/project`
//! shorthands, `git@host:…`, `//subdir`, `?ref=`, `?depth=`), naming the ones cascade does
//! not fetch (`s3::`, `gcs::`, `hg::`, HTTP archives, registries), and the two texts made
//! from a source: the key a cache files it under and the text a problem shows, both
//! without credentials. Never: fetches, resolves a host name, or decides whether a host
//! may be reached (the fetcher's allow-list does): a pull request writes these strings.
//!
//! Written here rather than taken from a crate: no maintained Rust crate reads go-getter's
//! addresses, and the rules are go-getter's detectors (`detect_github.go`,
//! `detect_gitlab.go`, `detect_ssh.go`, `get_git.go`), a few dozen lines; the `url` crate
//! parses every URL.

use std::fmt;
use url::Url;

/// What a remote `source` is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RemoteSource {
    /// A git repository cascade can fetch.
    Git(GitSource),
    /// A form Terragrunt takes and cascade does not fetch: the units stay unresolved,
    /// naming it.
    Unsupported { form: &'static str },
    /// Not an address git or Terragrunt would take, or one cascade refuses to act on
    /// (an option where a ref belongs, a key in the URL): why.
    Invalid { why: String },
}

/// A git repository, the commit-ish to check out, and where in it the unit or stack is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitSource {
    /// What `git fetch` is given: `https`, `http`, `ssh` or `file`, credentials included
    /// when the source wrote them.
    url: Url,
    /// The directory inside the repository (`//subdir`), cleaned; empty for its root.
    subdir: String,
    /// `?ref=`: a tag, a branch or a commit; `None` is the remote's default branch.
    reference: Option<String>,
    /// `?depth=`: how much history a fetch may take.
    depth: Option<u32>,
}

impl GitSource {
    pub fn url(&self) -> &Url {
        &self.url
    }

    pub fn subdir(&self) -> &str {
        &self.subdir
    }

    pub fn reference(&self) -> Option<&str> {
        self.reference.as_deref()
    }

    pub fn depth(&self) -> Option<u32> {
        self.depth
    }

    /// The host the fetch connects to (`None` for `file://`).
    pub fn host(&self) -> Option<&str> {
        self.url.host_str()
    }

    /// One spelling per repository, for the cache: scheme, host (lower case), port and
    /// path without a trailing `.git` or `/`, and no user or password. Two sources naming
    /// one repository differently (`github.com/acme/x` and `git::https://github.com/acme/x.git`)
    /// share it.
    pub fn repository_key(&self) -> String {
        let mut key = format!("{}://", self.url.scheme());
        if let Some(host) = self.url.host_str() {
            key.push_str(&host.to_ascii_lowercase());
        }
        if let Some(port) = self.url.port() {
            key.push_str(&format!(":{port}"));
        }
        let path = self.url.path().trim_end_matches('/');
        key.push_str(path.strip_suffix(".git").unwrap_or(path));
        key
    }

    /// The repository's URL as a problem or a comment may show it: no password, and no
    /// user but ssh's (`git@`, which is no secret).
    pub fn shown_url(&self) -> String {
        let mut url = self.url.clone();
        let _ = url.set_password(None);
        if url.scheme() != "ssh" {
            let _ = url.set_username("");
        }
        url.set_query(None);
        url.set_fragment(None);
        url.to_string()
    }
}

/// Which fetch a source needs: the repository and the ref, nothing else (two units from
/// one catalog at one ref share a fetch whatever their subdirectories). A plan resolves
/// each key once, so a branch that moves mid-plan gives every unit the same commit.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SourceKey {
    /// [`GitSource::repository_key`]: no credentials.
    pub repository: String,
    pub reference: Option<String>,
}

impl GitSource {
    pub fn key(&self) -> SourceKey {
        SourceKey {
            repository: self.repository_key(),
            reference: self.reference.clone(),
        }
    }
}

/// A fetched repository, as discovery reads it: the tree's directory on this machine (read
/// only through the file index's wall, never shown) and the commit its ref resolved to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchedSource {
    pub dir: std::path::PathBuf,
    pub commit: String,
}

/// Every source a discovery may serve from fetched trees: the tree, or why it was not
/// fetched (a reason a problem shows, without credentials). A key absent here is wanted.
pub type Sources = std::collections::BTreeMap<SourceKey, Result<FetchedSource, String>>;

impl fmt::Display for GitSource {
    /// The source as Terragrunt would write it, without credentials.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "git::{}", self.shown_url())?;
        if !self.subdir.is_empty() {
            write!(f, "//{}", self.subdir)?;
        }
        let mut sep = '?';
        if let Some(reference) = &self.reference {
            write!(f, "{sep}ref={reference}")?;
            sep = '&';
        }
        if let Some(depth) = self.depth {
            write!(f, "{sep}depth={depth}")?;
        }
        Ok(())
    }
}

/// Reads a `source` that is not a local path (the caller has checked with
/// `reads::is_local_source`).
pub fn parse(source: &str) -> RemoteSource {
    match parse_git(source) {
        Ok(Some(git)) => RemoteSource::Git(git),
        Ok(None) => RemoteSource::Unsupported {
            form: unsupported_form(source),
        },
        Err(why) => RemoteSource::Invalid { why },
    }
}

/// `Ok(None)` when the source is not a git form.
fn parse_git(source: &str) -> Result<Option<GitSource>, String> {
    let (forced, rest) = forced_getter(source);
    let (address, query) = match rest.split_once('?') {
        Some((address, query)) => (address, Some(query)),
        None => (rest, None),
    };
    let (address, subdir) = split_subdir(address);
    let (url, implied_subdir) = match forced {
        Some("git") => (git_url(address)?, String::new()),
        Some(_) => return Ok(None),
        None => match shorthand(address)? {
            Some(found) => found,
            None => return Ok(None),
        },
    };
    let subdir = join_subdir(&implied_subdir, subdir)?;
    let (reference, depth) = read_query(query)?;
    Ok(Some(GitSource {
        url,
        subdir,
        reference,
        depth,
    }))
}

/// go-getter's forced getter: `git::…`, `s3::…` (a word and `::` before anything else).
fn forced_getter(source: &str) -> (Option<&str>, &str) {
    match source.split_once("::") {
        Some((getter, rest))
            if !getter.is_empty() && getter.bytes().all(|b| b.is_ascii_alphanumeric()) =>
        {
            (Some(getter), rest)
        }
        _ => (None, source),
    }
}

/// Splits `//subdir` off the address, past a `scheme://`.
pub(super) fn split_subdir(address: &str) -> (&str, &str) {
    let from = address.find("://").map_or(0, |i| i + 3);
    match address[from..].find("//") {
        Some(i) => (&address[..from + i], &address[from + i + 2..]),
        None => (address, ""),
    }
}

/// The URL after `git::`: a URL git fetches, or scp's `user@host:path`.
fn git_url(address: &str) -> Result<Url, String> {
    if address.contains("://") {
        let url = Url::parse(address)
            .map_err(|e| format!("`git::` is followed by a URL git cannot read ({e})"))?;
        return match url.scheme() {
            "https" | "http" | "ssh" | "file" if url.scheme() == "file" || url.has_host() => {
                Ok(url)
            }
            "https" | "http" | "ssh" => Err("the URL after `git::` names no host".into()),
            other => Err(format!(
                "`git::` with a `{other}://` URL: cascade fetches https, http, ssh and file URLs"
            )),
        };
    }
    match scp_like(address)? {
        Some(url) => Ok(url),
        None => Err("`git::` is followed by neither a URL nor `user@host:path`".into()),
    }
}

/// scp's form, `git@github.com:acme/catalog.git`, as `ssh://git@github.com/acme/catalog.git`.
fn scp_like(address: &str) -> Result<Option<Url>, String> {
    let Some((user, rest)) = address.split_once('@') else {
        return Ok(None);
    };
    let Some((host, path)) = rest.split_once(':') else {
        return Ok(None);
    };
    if user.is_empty() || host.is_empty() || host.contains('/') || path.is_empty() {
        return Ok(None);
    }
    let path = path.trim_start_matches('/');
    Url::parse(&format!("ssh://{user}@{host}/{path}"))
        .map(Some)
        .map_err(|e| format!("`{user}@{host}:…` is not an address git can read ({e})"))
}

/// The forms without `git::` that are git: GitHub's and GitLab's shorthands (the first
/// two parts of the path name the repository, the rest is a subdirectory), and scp's
/// form with the user `git`. With the subdirectory the shorthand implies.
fn shorthand(address: &str) -> Result<Option<(Url, String)>, String> {
    for host in ["github.com", "gitlab.com"] {
        let Some(path) = address
            .strip_prefix(host)
            .and_then(|rest| rest.strip_prefix('/'))
        else {
            continue;
        };
        let parts: Vec<&str> = path.split('/').collect();
        if parts.len() < 2 || parts[0].is_empty() || parts[1].is_empty() {
            return Err(format!(
                "`{host}` sources name a repository: `{host}/owner/repo`"
            ));
        }
        let repo = parts[1].strip_suffix(".git").unwrap_or(parts[1]);
        let url = Url::parse(&format!("https://{host}/{}/{repo}.git", parts[0]))
            .map_err(|e| format!("`{host}/…` is not an address git can read ({e})"))?;
        return Ok(Some((url, parts[2..].join("/"))));
    }
    match address.split_once('@') {
        Some(("git", _)) => Ok(scp_like(address)?.map(|url| (url, String::new()))),
        _ => Ok(None),
    }
}

/// The shorthand's subdirectory, then `//subdir`, cleaned; one that climbs out of the
/// repository is refused.
fn join_subdir(implied: &str, written: &str) -> Result<String, String> {
    let joined = match (implied.is_empty(), written.is_empty()) {
        (true, _) => written.to_string(),
        (false, true) => implied.to_string(),
        (false, false) => format!("{implied}/{written}"),
    };
    match super::paths::clean(&joined) {
        Some(clean) => Ok(clean),
        None => Err(format!(
            "the subdirectory `{}` climbs out of the repository",
            crate::inert::visible_line(&joined)
        )),
    }
}

/// `ref=` and `depth=`; anything else is refused, `sshkey=` by name (a key a pull request
/// wrote is never used).
fn read_query(query: Option<&str>) -> Result<(Option<String>, Option<u32>), String> {
    let (mut reference, mut depth) = (None, None);
    let Some(query) = query else {
        return Ok((reference, depth));
    };
    for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
        match &*name {
            "ref" => reference = Some(checked_ref(&value)?),
            "depth" => {
                depth = Some(
                    value
                        .parse::<u32>()
                        .ok()
                        .filter(|d| *d > 0)
                        .ok_or_else(|| "`depth=` takes a positive number".to_string())?,
                )
            }
            "sshkey" => {
                return Err(
                    "`sshkey=` puts a private key in the source; cascade fetches with the keys its operator configured, never one a pull request wrote"
                        .into(),
                );
            }
            other => {
                return Err(format!(
                    "`{}=` is not a parameter cascade reads from a source: only `ref=` and `depth=`",
                    crate::inert::visible_line(other)
                ));
            }
        }
    }
    Ok((reference, depth))
}

/// A ref git can only take as a ref: a tag, branch or commit name, never an option (`-…`),
/// a range (`..`), or anything outside git's ref characters.
fn checked_ref(value: &str) -> Result<String, String> {
    let allowed = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/');
    let ok = !value.is_empty()
        && value.len() <= 255
        && !value.starts_with(['-', '/', '.'])
        && !value.ends_with(['/', '.'])
        && !value.contains("..")
        && !value.contains("//")
        && !value.ends_with(".lock")
        && value.bytes().all(allowed);
    if ok {
        Ok(value.to_string())
    } else {
        Err(format!(
            "`ref={}` is not a tag, branch or commit name cascade takes (letters, digits, `.`, `_`, `-` and `/`, not starting with `-`)",
            crate::inert::visible_line(&value.chars().take(80).collect::<String>())
        ))
    }
}

/// How to name a form that is not git.
fn unsupported_form(source: &str) -> &'static str {
    let (forced, rest) = forced_getter(source);
    match forced {
        Some("s3") => return "an S3 bucket (`s3::`)",
        Some("gcs") => return "a Google Cloud Storage bucket (`gcs::`)",
        Some("hg") => return "a Mercurial repository (`hg::`)",
        Some("http" | "https") => return "an HTTP download (`http::`)",
        Some("file") => return "a `file::` path",
        Some(_) => return "a go-getter getter cascade does not know",
        None => {}
    }
    let host = rest.split(['/', '?']).next().unwrap_or("");
    if rest.starts_with("tfr://") {
        "a Terraform registry module (`tfr://`)"
    } else if rest.starts_with("http://") || rest.starts_with("https://") {
        "an HTTP URL (an archive or a redirect)"
    } else if host.ends_with(".amazonaws.com") {
        "an S3 bucket"
    } else if host == "www.googleapis.com" || host == "storage.googleapis.com" {
        "a Google Cloud Storage bucket"
    } else if host == "bitbucket.org" {
        "a Bitbucket shorthand (write it as `git::https://bitbucket.org/…`)"
    } else if rest.contains("://") {
        "a URL scheme go-getter reads and cascade does not"
    } else {
        "an address cascade does not recognise (write a git source as `git::https://…`)"
    }
}

#[cfg(test)]
#[path = "remote_source_tests.rs"]
mod tests;
