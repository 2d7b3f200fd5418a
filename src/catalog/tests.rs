//! Fetching from real git repositories on disk (the CLI's access, over `file://`) and
//! the server's refusals. The server's fetch over smart HTTP with the forge's token is
//! tested against the fake GitHub (`tests/it/`).

use super::*;
use crate::terragrunt::remote_source::{RemoteSource, parse};
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {:?}", out);
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A catalog repository: `v1` (annotated tag) holds units/db at "one", `main` moved on
/// to "two". Returns its directory and the two commits.
fn catalog_repo(tmp: &Path) -> (PathBuf, String, String) {
    let dir = tmp.join("catalog");
    std::fs::create_dir_all(&dir).unwrap();
    git(&dir, &["init", "-q", "-b", "main"]);
    write(&dir, "units/db/terragrunt.hcl", "# one\n");
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "one"]);
    let one = git(&dir, &["rev-parse", "HEAD"]);
    git(&dir, &["tag", "-a", "v1", "-m", "v1"]);
    write(&dir, "units/db/terragrunt.hcl", "# two\n");
    git(&dir, &["commit", "-qam", "two"]);
    let two = git(&dir, &["rev-parse", "HEAD"]);
    // Fetching a commit by its sha needs the server to allow it (GitHub does).
    git(&dir, &["config", "uploadpack.allowAnySHA1InWant", "true"]);
    (dir, one, two)
}

fn source(text: &str) -> GitSource {
    match parse(text) {
        RemoteSource::Git(git) => git,
        other => panic!("{text}: {other:?}"),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_tag_a_branch_and_a_sha_each_fetch_their_commit_once() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, one, two) = catalog_repo(tmp.path());
    let catalog = Catalog::new(tmp.path().join("sources"), Access::User);
    let url = format!("git::file://{}", repo.display());
    runtime().block_on(async {
        for (reference, commit, text) in [
            ("?ref=v1", &one, "# one\n"),
            ("?ref=main", &two, "# two\n"),
            ("", &two, "# two\n"),
            (&format!("?ref={one}")[..], &one, "# one\n"),
        ] {
            let fetched = catalog
                .fetch(&source(&format!("{url}//units/db{reference}")))
                .await
                .unwrap_or_else(|e| panic!("{reference}: {e}"));
            assert_eq!(&fetched.commit, commit, "{reference}");
            let unit = fetched.dir.join("units/db/terragrunt.hcl");
            assert_eq!(std::fs::read_to_string(&unit).unwrap(), text);
            let mode = std::fs::metadata(&unit).unwrap().permissions().mode();
            assert_eq!(mode & 0o222, 0, "read-only: {mode:o}");
        }
        // v1 and its sha share one tree; main and the default branch another.
        assert_eq!(catalog.fetch_count(), 2);
        // A sha in the cache is never asked of the remote, even when it is gone.
        std::fs::rename(&repo, tmp.path().join("moved")).unwrap();
        let again = catalog
            .fetch(&source(&format!("{url}?ref={one}")))
            .await
            .unwrap();
        assert_eq!(again.commit, one);
        assert_eq!(catalog.fetch_count(), 2);
        // A branch is asked again: it may have moved.
        let gone = catalog.fetch(&source(&format!("{url}?ref=main"))).await;
        assert!(matches!(gone, Err(FetchError::Unreachable(_))), "{gone:?}");
    });
}

#[test]
fn a_missing_ref_and_a_missing_repository_say_which() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, ..) = catalog_repo(tmp.path());
    let catalog = Catalog::new(tmp.path().join("sources"), Access::User);
    runtime().block_on(async {
        let missing = catalog
            .fetch(&source(&format!("git::file://{}?ref=v9", repo.display())))
            .await
            .unwrap_err();
        assert_eq!(missing, FetchError::RefNotFound("v9".into()));
        assert!(
            missing.to_string().starts_with("ref not found"),
            "{missing}"
        );
        let nowhere = catalog
            .fetch(&source("git::file:///nonexistent/catalog?ref=v1"))
            .await
            .unwrap_err();
        assert!(
            nowhere.to_string().starts_with("could not reach"),
            "{nowhere}"
        );
    });
}

#[test]
fn the_server_fetches_from_no_path_and_no_unlisted_host() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, ..) = catalog_repo(tmp.path());
    let server = |hosts: &[&str]| {
        Catalog::new(
            tmp.path().join("server-sources"),
            Access::Server {
                hosts: SourceHosts::parse(&hosts.iter().map(|h| h.to_string()).collect::<Vec<_>>())
                    .unwrap(),
                forge: None,
                git_config: None,
            },
        )
    };
    runtime().block_on(async {
        let local = server(&["github.com"])
            .fetch(&source(&format!("git::file://{}?ref=v1", repo.display())))
            .await;
        assert_eq!(local, Err(FetchError::LocalOnServer));
        for (url, host) in [
            (
                "git::http://169.254.169.254/latest/catalog.git",
                "169.254.169.254",
            ),
            ("git::http://127.0.0.1:9/catalog.git", "127.0.0.1"),
            ("git::https://[::1]/catalog.git", "[::1]"),
            ("gitlab.com/acme/catalog", "gitlab.com"),
            ("git::ssh://git@evil.example/x.git", "evil.example"),
        ] {
            let refused = server(&["github.com"])
                .fetch(&source(url))
                .await
                .unwrap_err();
            assert_eq!(
                refused,
                FetchError::NotAllowed { host: host.into() },
                "{url}"
            );
            assert!(refused.to_string().contains("--source-host"), "{refused}");
        }
        assert_eq!(server(&["github.com"]).fetch_count(), 0);
    });
}

#[test]
fn a_source_over_a_limit_is_refused_and_leaves_nothing_in_the_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, ..) = catalog_repo(tmp.path());
    // Incompressible bytes, so the pack is as large as the file.
    let noise: Vec<u8> = (0..6_250u32)
        .flat_map(|i| Sha256::digest(i.to_le_bytes()))
        .collect();
    std::fs::write(repo.join("units/blob.bin"), &noise).unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "big"]);
    let url = format!("git::file://{}?ref=main", repo.display());
    let root = tmp.path().join("sources");
    let small = |limits| Catalog::new(root.clone(), Access::User).with_limits(limits);
    runtime().block_on(async {
        let fetch = small(SourceLimits {
            fetch_bytes: 50_000,
            ..SourceLimits::default()
        })
        .fetch(&source(&url))
        .await
        .unwrap_err();
        assert!(
            fetch
                .to_string()
                .contains("exceeds cascade's limit of 50000 bytes for one source's fetch"),
            "{fetch}"
        );
        let files = small(SourceLimits {
            files: 3,
            ..SourceLimits::default()
        })
        .fetch(&source(&url))
        .await
        .unwrap_err();
        assert!(files.to_string().contains("limit of 3 files"), "{files}");
        let bytes = small(SourceLimits {
            tree_bytes: 100_000,
            ..SourceLimits::default()
        })
        .fetch(&source(&url))
        .await
        .unwrap_err();
        assert!(
            bytes.to_string().contains("limit of 100000 bytes"),
            "{bytes}"
        );
    });
    // Nothing half-written stays: no tree, no scratch directory.
    let trees: Vec<_> = walkdir::WalkDir::new(root.join("trees"))
        .min_depth(2)
        .into_iter()
        .collect();
    assert!(trees.is_empty(), "{trees:?}");
}

/// The loop fetches each (repository, ref) once, however often discovery names it, keeps
/// a failure as its reason, and stops once nothing new is asked for.
#[test]
fn each_source_is_resolved_once_per_discovery() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, one, _) = catalog_repo(tmp.path());
    let catalog = Catalog::new(tmp.path().join("sources"), Access::User);
    let url = format!("git::file://{}", repo.display());
    let db = source(&format!("{url}//units/db?ref=main"));
    let role = source(&format!("{url}//units/role?ref=main"));
    let tag = source(&format!("{url}//units/db?ref=v1"));
    let missing = source(&format!("{url}//units/db?ref=nope"));
    let mut sources = crate::terragrunt::remote_source::Sources::new();
    let mut rounds = 0;
    runtime().block_on(catalog.discover_with_sources(&mut sources, |known| {
        rounds += 1;
        // Every round names them all, as a discovery would while they are missing.
        let wanted = [&db, &role, &tag, &missing]
            .into_iter()
            .filter(|s| !known.contains_key(&s.key()))
            .cloned()
            .collect();
        ((), wanted)
    }));
    assert_eq!(rounds, 2);
    // `main` once for db and role (one key), `v1` once; the missing ref fetched nothing.
    assert_eq!(catalog.fetch_count(), 2);
    assert_eq!(sources.len(), 3);
    assert_eq!(sources[&tag.key()].as_ref().unwrap().commit, one);
    assert!(
        sources[&missing.key()]
            .as_ref()
            .unwrap_err()
            .contains("ref not found")
    );
}
