//! go-getter's forms as Terragrunt's users write them (Gruntwork's live-stacks example,
//! the Terraform docs' module sources), and the addresses a pull request could write to
//! make cascade act on something else.

use super::*;

fn git(source: &str) -> GitSource {
    match parse(source) {
        RemoteSource::Git(git) => git,
        other => panic!("{source}: {other:?}"),
    }
}

fn invalid(source: &str) -> String {
    match parse(source) {
        RemoteSource::Invalid { why } => why,
        other => panic!("{source}: {other:?}"),
    }
}

fn unsupported(source: &str) -> &'static str {
    match parse(source) {
        RemoteSource::Unsupported { form } => form,
        other => panic!("{source}: {other:?}"),
    }
}

#[test]
fn every_git_form_names_the_repository_the_ref_and_the_subdirectory() {
    for (source, url, subdir, reference) in [
        (
            "github.com/acme/catalog//units/db?ref=v1.2.0",
            "https://github.com/acme/catalog.git",
            "units/db",
            Some("v1.2.0"),
        ),
        (
            "github.com/acme/catalog.git/units/db",
            "https://github.com/acme/catalog.git",
            "units/db",
            None,
        ),
        (
            "gitlab.com/acme/catalog/units//db?ref=main",
            "https://gitlab.com/acme/catalog.git",
            "units/db",
            Some("main"),
        ),
        (
            "git::git@github.com:acme/catalog.git//units/db?ref=v1.2.0",
            "ssh://git@github.com/acme/catalog.git",
            "units/db",
            Some("v1.2.0"),
        ),
        (
            "git@github.com:acme/catalog.git//stacks/app",
            "ssh://git@github.com/acme/catalog.git",
            "stacks/app",
            None,
        ),
        (
            "git::https://git.example.com/platform/catalog.git//units/./db/?ref=0123456789abcdef0123456789abcdef01234567",
            "https://git.example.com/platform/catalog.git",
            "units/db",
            Some("0123456789abcdef0123456789abcdef01234567"),
        ),
        (
            "git::ssh://git@git.example.com:2222/platform/catalog.git?ref=release/2026-12",
            "ssh://git@git.example.com:2222/platform/catalog.git",
            "",
            Some("release/2026-12"),
        ),
        (
            "git::file:///srv/catalog//units/db",
            "file:///srv/catalog",
            "units/db",
            None,
        ),
    ] {
        let git = git(source);
        assert_eq!(git.url().as_str(), url, "{source}");
        assert_eq!(git.subdir(), subdir, "{source}");
        assert_eq!(git.reference(), reference, "{source}");
    }
    assert_eq!(
        git("git::https://github.com/acme/catalog.git?ref=v1&depth=1").depth(),
        Some(1)
    );
}

#[test]
fn one_repository_spelled_several_ways_has_one_cache_key() {
    let keys: Vec<String> = [
        "github.com/acme/catalog//units/db",
        "git::https://github.com/acme/catalog.git//units/app?ref=v2",
        "git::https://x-access-token:secret@GitHub.com/acme/catalog",
        "git::https://github.com/acme/catalog/",
    ]
    .iter()
    .map(|s| git(s).repository_key())
    .collect();
    assert!(
        keys.iter().all(|k| k == "https://github.com/acme/catalog"),
        "{keys:?}"
    );
    assert_ne!(
        git("git::ssh://git@github.com/acme/catalog.git").repository_key(),
        keys[0],
        "another transport is another fetch"
    );
}

#[test]
fn credentials_written_in_a_source_are_never_shown() {
    let git = git("git::https://bob:ghp_secret@git.example.com/acme/catalog.git//db?ref=v1");
    assert_eq!(
        git.to_string(),
        "git::https://git.example.com/acme/catalog.git//db?ref=v1"
    );
    assert!(!git.repository_key().contains("secret") && !git.repository_key().contains("bob"));
    // The URL git is given keeps them: an operator's mirror may need them.
    assert_eq!(git.url().password(), Some("ghp_secret"));
    let ssh = git_ssh();
    assert_eq!(
        ssh.to_string(),
        "git::ssh://git@github.com/acme/catalog.git//units/db?ref=v1.2.0"
    );
}

fn git_ssh() -> GitSource {
    git("git@github.com:acme/catalog.git//units/db?ref=v1.2.0")
}

#[test]
fn forms_cascade_does_not_fetch_are_named() {
    for (source, form) in [
        ("s3::https://s3.amazonaws.com/bucket/db.zip", "S3"),
        (
            "gcs::https://www.googleapis.com/storage/v1/b/db.zip",
            "Google Cloud",
        ),
        ("hg::https://hg.example.com/catalog", "Mercurial"),
        ("https://example.com/units/db.zip", "HTTP URL"),
        (
            "tfr://registry.terraform.io/acme/db/aws?version=1.0.0",
            "registry",
        ),
        ("bucket.s3.amazonaws.com/units/db.zip", "S3"),
        ("bitbucket.org/acme/catalog", "Bitbucket"),
        ("acme/db/aws", "does not recognise"),
    ] {
        let named = unsupported(source);
        assert!(named.contains(form), "{source}: {named}");
    }
}

#[test]
fn a_source_cannot_smuggle_an_option_a_key_or_a_climb() {
    for (source, why) in [
        (
            "github.com/acme/catalog?ref=--upload-pack=touch%20/tmp/pwned",
            "not starting with `-`",
        ),
        ("github.com/acme/catalog?ref=main..evil", "not a tag"),
        ("github.com/acme/catalog?ref=", "not a tag"),
        (
            "git::git@github.com:acme/catalog.git?sshkey=LS0tLS1CRUdJTg",
            "never one a pull request wrote",
        ),
        (
            "github.com/acme/catalog?submodules=true",
            "only `ref=` and `depth=`",
        ),
        ("github.com/acme/catalog?depth=0", "positive number"),
        ("github.com/acme/catalog//../../etc", "climbs out"),
        ("github.com/acme/catalog/a/../../..", "climbs out"),
        ("github.com/acme", "github.com/owner/repo"),
        ("git::ext::sh -c touch% /tmp/pwned", "neither a URL"),
        (
            "git::ext://sh/c",
            "cascade fetches https, http, ssh and file",
        ),
        ("git::fd::17/foo", "neither a URL"),
        ("git::ssh:///no-host", "names no host"),
    ] {
        let said = invalid(source);
        assert!(said.contains(why), "{source}: {said}");
    }
}

#[test]
fn what_a_refusal_quotes_is_one_visible_line() {
    let said = invalid("github.com/acme/catalog?ref=a%0Ab%1B%5B2J");
    assert!(!said.contains('\n') && !said.contains('\u{1b}'), "{said:?}");
}
