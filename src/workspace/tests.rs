use super::*;

/// The engine spawns these on a multi-threaded runtime.
#[allow(dead_code, clippy::let_underscore_future)]
fn futures_are_send(ws: &Workspaces) {
    fn send<T: Send>(_: T) {}
    let from = crate::forge::CloneUrl::local("/u").unwrap();
    send(ws.fetch("a/b", &from, None, &[]));
    send(ws.checkout("a/b", 1, "s"));
    send(ws.forget("a/b", 1));
}

#[test]
fn refspecs_are_normalized() {
    let sha = "a".repeat(40);
    assert_eq!(
        normalize_refspec("refs/pull/7/head").unwrap(),
        "+refs/pull/7/head:refs/pull/7/head"
    );
    assert_eq!(
        normalize_refspec("main").unwrap(),
        "+refs/heads/main:refs/heads/main"
    );
    assert_eq!(
        normalize_refspec(&sha).unwrap(),
        format!("+{sha}:refs/cascade/commits/{sha}")
    );
    assert_eq!(
        normalize_refspec("+refs/heads/*:refs/heads/*").unwrap(),
        "+refs/heads/*:refs/heads/*"
    );
    assert!(normalize_refspec("--upload-pack=evil").is_err());
    assert!(normalize_refspec("a:b").is_err());
    assert!(normalize_refspec("").is_err());
}

#[test]
fn repo_names_are_validated() {
    assert_eq!(
        RepoName::parse("Acme/Infra.live").unwrap().key(),
        "acme/infra.live"
    );
    assert!(RepoName::parse("acme/.github").is_ok());
    for bad in [
        "../x",
        "a/b/c",
        "x",
        "/x",
        "a/",
        "a/..",
        "./a",
        "a b/c",
        "-a/b",
        "",
        "@gitlab/x",
    ] {
        assert!(RepoName::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn gitlab_project_paths_are_validated() {
    let name = RepoName::parse("gitlab:Acme/Platform/Infra").unwrap();
    assert_eq!(name.key(), "gitlab:acme/platform/infra");
    assert_eq!(name.dirs, ["@gitlab", "acme", "platform", "infra.git"]);
    assert!(RepoName::parse("gitlab:acme/infra_live.v2").is_ok());
    let deep = format!("gitlab:{}", ["g"; 22].join("/"));
    assert!(RepoName::parse(&deep).is_ok());
    for bad in [
        "gitlab:",
        "gitlab:infra",
        "gitlab:acme//infra",
        "gitlab:acme/infra/",
        "gitlab:/acme/infra",
        "gitlab:acme/../infra",
        "gitlab:acme/./infra",
        "gitlab:acme/.hidden",
        "gitlab:acme/-x",
        "gitlab:acme/in fra",
        "gitlab:acme/in%2Ffra",
        "gitlab:acme\\x/infra",
        "gitlab:acme.git/infra",
        "gitlab:acme/infra.git",
        "gitlab:acme/feed.atom",
        "gitlab:acme:x/infra",
        "GitLab:acme/infra",
    ] {
        assert!(RepoName::parse(bad).is_err(), "{bad}");
    }
    let too_deep = format!("gitlab:{}", ["g"; 23].join("/"));
    assert!(RepoName::parse(&too_deep).is_err());
}
