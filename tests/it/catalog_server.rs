//! The server fetching a stack's remote source from the forge it serves: a unit catalog
//! served over git's smart HTTP by the fake GitHub, which checks the installation token
//! as GitHub does. The token reaches that origin only; a repository the installation
//! cannot read is not fetched; an ssh address on the forge goes over https with the
//! token; a host nobody listed (a stranger on the loopback) is never called.

use crate::support::fake_github::{FakeGitHub, app_key};
use crate::support::git;
use crate::support::recorder::Recorder;
use cascade::catalog::{Access, Catalog, FetchError, SourceHosts};
use cascade::forge::Forge;
use cascade::forge::github::GitHubApp;
use cascade::terragrunt::remote_source::{GitSource, RemoteSource, parse};
use std::path::Path;

/// A bare catalog repository with `units/db` at tag `v1`: (its directory, v1's commit).
fn catalog_origin(tmp: &Path) -> (String, String) {
    let work = tmp.join("work");
    std::fs::create_dir_all(work.join("units/db")).unwrap();
    git(&work, &["init", "-q"]);
    std::fs::write(work.join("units/db/terragrunt.hcl"), "# db\n").unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "db"]);
    git(&work, &["tag", "v1"]);
    let commit = git(&work, &["rev-parse", "HEAD"]);
    let origin = tmp.join("catalog.git").to_str().unwrap().to_string();
    git(
        tmp,
        &["clone", "-q", "--bare", work.to_str().unwrap(), &origin],
    );
    (origin, commit)
}

fn source(text: &str) -> GitSource {
    match parse(text) {
        RemoteSource::Git(git) => git,
        other => panic!("{text}: {other:?}"),
    }
}

fn hosts(values: &[&str]) -> SourceHosts {
    SourceHosts::parse(&values.iter().map(|v| v.to_string()).collect::<Vec<_>>()).unwrap()
}

#[tokio::test]
async fn the_served_forge_is_fetched_from_with_its_token_and_nothing_else_is_reached() {
    let tmp = tempfile::tempdir().unwrap();
    let (origin, commit) = catalog_origin(tmp.path());
    let fake = FakeGitHub::start().await;
    fake.add_installation(77, "acme");
    fake.add_repo("acme/catalog", Some(Path::new(&origin)));
    fake.add_installation(78, "other");
    fake.add_repo("other/catalog", Some(Path::new(&origin)));
    let app = GitHubApp::builder(&fake.url(), fake.app_id(), &app_key())
        .build()
        .unwrap();
    let forge = Forge::GitHub(app.installation(77).await.unwrap());
    let credential = forge.git_credential().await.unwrap();
    let token = credential.token().to_string();
    let stranger = Recorder::not_found();
    let catalog = |forge, listed: &[&str]| {
        Catalog::new(
            tmp.path().join("sources"),
            Access::Server {
                hosts: hosts(listed),
                forge,
                git_config: None,
            },
        )
    };
    let served = catalog(Some(credential.clone()), &[]);
    let url = fake.url();
    let fetched = served
        .fetch(&source(&format!(
            "git::{url}/acme/catalog.git//units/db?ref=v1"
        )))
        .await
        .unwrap();
    assert_eq!(fetched.commit, commit);
    assert!(fetched.dir.join("units/db/terragrunt.hcl").is_file());

    // scp's form at the forge's host goes over https(here http) with the token.
    let host_port = url.trim_start_matches("http://");
    let host = host_port.split(':').next().unwrap();
    let fresh = catalog(Some(credential.clone()), &[]);
    let over_ssh = fresh
        .fetch(&source(&format!(
            "git@{host}:acme/catalog.git//units/db?ref=v1"
        )))
        .await
        .unwrap();
    assert_eq!(over_ssh.commit, commit);

    // Another installation's repository: GitHub answers 404 to this token.
    let foreign = served
        .fetch(&source(&format!("git::{url}/other/catalog.git?ref=v1")))
        .await
        .unwrap_err();
    assert!(matches!(foreign, FetchError::Unreachable(_)), "{foreign:?}");
    assert!(!foreign.to_string().contains(&token), "{foreign}");

    // Without the forge's credential, the forge is a host like any other: not listed.
    let refused = catalog(None, &[])
        .fetch(&source(&format!("git::{url}/acme/catalog.git?ref=v1")))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, FetchError::NotAllowed { .. }),
        "{refused:?}"
    );

    // A stranger on the loopback, not listed: never called, by any spelling.
    let port = stranger.url.rsplit(':').next().unwrap();
    for address in [
        format!("git::{}/x/catalog.git", stranger.url),
        format!("git::http://localhost:{port}/x/catalog.git"),
        format!("git::http://2130706433:{port}/x/catalog.git"),
        format!("git::ssh://git@127.0.0.1:{port}/x/catalog.git"),
    ] {
        let refused = served.fetch(&source(&address)).await.unwrap_err();
        assert!(
            matches!(refused, FetchError::NotAllowed { .. }),
            "{address}: {refused:?}"
        );
    }
    assert!(stranger.heads().is_empty(), "{:?}", stranger.heads());

    // Listed by the operator, the stranger is called, and without the forge's token.
    let listed = catalog(Some(credential), &[&stranger.url]);
    let unreachable = listed
        .fetch(&source(&format!(
            "git::{}/x/catalog.git?ref=v1",
            stranger.url
        )))
        .await
        .unwrap_err();
    assert!(
        matches!(unreachable, FetchError::Unreachable(_)),
        "{unreachable:?}"
    );
    assert!(!stranger.heads().is_empty());
    assert!(!stranger.saw_credentials(), "{:?}", stranger.heads());
}
