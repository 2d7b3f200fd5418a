//! `cascade::workspace` against real git repositories: a bare origin and a
//! working clone made with the git CLI in temp dirs, fetched from the bare directory;
//! and plain HTTP listeners for what goes over the network (the token, timeouts).

use crate::support;

use cascade::forge::{CloneUrl, GitCredential, GitOrigin};
use cascade::git::Change;
use cascade::workspace::Workspaces;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::recorder::Recorder;
use tempfile::TempDir;

const REPO: &str = "acme/infra";

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
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A bare origin plus a working clone that pushes to it.
struct Origin {
    _tmp: TempDir,
    bare: PathBuf,
    work: PathBuf,
}

impl Origin {
    fn new() -> Origin {
        let tmp = TempDir::new().unwrap();
        let bare = tmp.path().join("origin.git");
        let work = tmp.path().join("work");
        git(
            tmp.path(),
            &["init", "-q", "--bare", "-b", "main", "origin.git"],
        );
        git(tmp.path(), &["init", "-q", "-b", "main", "work"]);
        git(&work, &["remote", "add", "origin", bare.to_str().unwrap()]);
        Origin {
            _tmp: tmp,
            bare,
            work,
        }
    }

    fn url(&self) -> CloneUrl {
        CloneUrl::local(&self.bare).unwrap()
    }

    fn write(&self, file: &str, content: &str) {
        let path = self.work.join(file);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    fn remove(&self, file: &str) {
        fs::remove_file(self.work.join(file)).unwrap();
    }

    /// Commits everything and pushes the current branch; returns the sha.
    fn commit(&self, message: &str) -> String {
        git(&self.work, &["add", "-A"]);
        git(
            &self.work,
            &["commit", "-q", "--allow-empty", "-m", message],
        );
        git(&self.work, &["push", "-q", "--force", "origin", "HEAD"]);
        git(&self.work, &["rev-parse", "HEAD"])
    }

    fn switch(&self, branch: &str) {
        git(&self.work, &["checkout", "-q", "-B", branch]);
    }

    fn switch_existing(&self, branch: &str) {
        git(&self.work, &["checkout", "-q", branch]);
    }
}

fn workspaces() -> (TempDir, Workspaces) {
    let tmp = TempDir::new().unwrap();
    let ws = Workspaces::new(tmp.path().join("workspaces"));
    (tmp, ws)
}

fn refs(specs: &[&str]) -> Vec<String> {
    specs.iter().map(|s| s.to_string()).collect()
}

fn mirror_rev(mirror: &Path, rev: &str) -> String {
    git(mirror, &["rev-parse", "--verify", rev])
}

#[tokio::test]
async fn fetch_creates_a_mirror_and_fetches_again_incrementally() {
    let origin = Origin::new();
    origin.write("live/vpc/terragrunt.hcl", "# vpc\n");
    let first = origin.commit("seed");
    let (tmp, ws) = workspaces();

    let mirror = ws
        .fetch(REPO, &origin.url(), None, &refs(&["main"]))
        .await
        .unwrap();
    assert_eq!(mirror, tmp.path().join("workspaces/mirrors/acme/infra.git"));
    assert_eq!(git(&mirror, &["rev-parse", "--is-bare-repository"]), "true");
    assert_eq!(mirror_rev(&mirror, "refs/heads/main"), first);

    origin.write("live/vpc/terragrunt.hcl", "# vpc 2\n");
    let second = origin.commit("second");
    let again = ws
        .fetch(REPO, &origin.url(), None, &refs(&["refs/heads/main"]))
        .await
        .unwrap();
    assert_eq!(again, mirror);
    assert_eq!(mirror_rev(&mirror, "refs/heads/main"), second);
    // Both commits are there: the second fetch added to the first.
    assert_eq!(mirror_rev(&mirror, &format!("{first}^{{commit}}")), first);

    // A force-push that rewrites main is followed.
    git(&origin.work, &["reset", "-q", "--hard", &first]);
    origin.write("other.hcl", "x\n");
    let rewritten = origin.commit("rewritten");
    ws.fetch(REPO, &origin.url(), None, &refs(&["main"]))
        .await
        .unwrap();
    assert_eq!(mirror_rev(&mirror, "refs/heads/main"), rewritten);
}

#[tokio::test]
async fn fetch_takes_pull_refs_and_commit_shas_and_plain_paths() {
    let origin = Origin::new();
    origin.write("a.hcl", "a\n");
    origin.commit("seed");
    origin.switch("feature");
    origin.write("b.hcl", "b\n");
    let head = origin.commit("feature");
    git(&origin.bare, &["update-ref", "refs/pull/7/head", &head]);
    git(&origin.bare, &["update-ref", "-d", "refs/heads/feature"]);
    let (_tmp, ws) = workspaces();

    let mirror = ws
        .fetch(
            REPO,
            &origin.url(),
            Some(&credential(
                &origin_of("https://github.com"),
                "ghs_ignored_for_local_paths",
            )),
            &refs(&["refs/pull/7/head", "main"]),
        )
        .await
        .unwrap();
    assert_eq!(mirror_rev(&mirror, "refs/pull/7/head"), head);

    // A sha is kept under a ref of its own, so it stays reachable.
    let (_tmp2, ws2) = workspaces();
    let mirror2 = ws2
        .fetch(REPO, &origin.url(), None, &refs(&[&head]))
        .await
        .unwrap();
    assert_eq!(
        mirror_rev(&mirror2, &format!("refs/cascade/commits/{head}")),
        head
    );
}

#[tokio::test]
async fn fetch_of_a_missing_ref_names_the_repository() {
    let origin = Origin::new();
    origin.commit("seed");
    let (_tmp, ws) = workspaces();
    let err = ws
        .fetch(REPO, &origin.url(), None, &refs(&["refs/pull/99/head"]))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("cannot fetch acme/infra"), "{err}");
    assert!(err.contains("refs/pull/99/head"), "{err}");
    assert!(err.contains("check the installation has access"), "{err}");
}

#[tokio::test]
async fn checkout_reuses_the_directory_and_keeps_terraform_artefacts() {
    let origin = Origin::new();
    origin.write(".gitignore", ".terraform/\n*.tfstate\n*.tfstate.backup\n");
    origin.write("live/app/terragrunt.hcl", "# app 1\n");
    origin.write("live/app/old.hcl", "old\n");
    let first = origin.commit("seed");
    let (tmp, ws) = workspaces();
    ws.fetch(REPO, &origin.url(), None, &refs(&["main"]))
        .await
        .unwrap();

    let dir = ws.checkout(REPO, 12, &first).await.unwrap();
    assert_eq!(
        dir,
        tmp.path().join("workspaces/checkouts/acme/infra/pr-12")
    );
    assert_eq!(
        fs::read_to_string(dir.join("live/app/terragrunt.hcl")).unwrap(),
        "# app 1\n"
    );
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]), first);

    // What a plan leaves behind, plus stray edits.
    fs::create_dir_all(dir.join("live/app/.terraform/providers")).unwrap();
    fs::write(dir.join("live/app/.terraform/providers/p"), "cache").unwrap();
    fs::write(dir.join("live/app/terraform.tfstate"), "{}").unwrap();
    fs::write(dir.join("live/app/terraform.tfstate.backup"), "{}").unwrap();
    fs::write(dir.join("live/app/stray.txt"), "stray").unwrap();
    fs::create_dir_all(dir.join("junk")).unwrap();
    fs::write(dir.join("junk/x"), "x").unwrap();
    fs::write(dir.join("live/app/terragrunt.hcl"), "edited").unwrap();

    origin.write("live/app/terragrunt.hcl", "# app 2\n");
    origin.remove("live/app/old.hcl");
    let second = origin.commit("second");
    ws.fetch(REPO, &origin.url(), None, &refs(&["main"]))
        .await
        .unwrap();
    let again = ws.checkout(REPO, 12, &second).await.unwrap();
    assert_eq!(again, dir);
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]), second);
    assert_eq!(
        fs::read_to_string(dir.join("live/app/terragrunt.hcl")).unwrap(),
        "# app 2\n"
    );
    assert!(!dir.join("live/app/old.hcl").exists());
    assert_eq!(
        fs::read_to_string(dir.join("live/app/.terraform/providers/p")).unwrap(),
        "cache"
    );
    assert!(dir.join("live/app/terraform.tfstate").is_file());
    assert!(dir.join("live/app/terraform.tfstate.backup").is_file());
    assert!(!dir.join("live/app/stray.txt").exists());
    assert!(!dir.join("junk").exists());

    // Back to an older sha works too (a force-push).
    ws.checkout(REPO, 12, &first).await.unwrap();
    assert_eq!(
        fs::read_to_string(dir.join("live/app/terragrunt.hcl")).unwrap(),
        "# app 1\n"
    );

    // Another pull request gets its own directory.
    let other = ws.checkout(REPO, 13, &second).await.unwrap();
    assert_ne!(other, dir);
    assert!(other.join("live/app/terragrunt.hcl").is_file());
}

#[tokio::test]
async fn checkout_is_remade_when_deleted_behind_its_back() {
    let origin = Origin::new();
    origin.write("a.hcl", "a\n");
    let sha = origin.commit("seed");
    let (_tmp, ws) = workspaces();
    ws.fetch(REPO, &origin.url(), None, &refs(&["main"]))
        .await
        .unwrap();
    let dir = ws.checkout(REPO, 1, &sha).await.unwrap();
    fs::remove_dir_all(&dir).unwrap();
    let again = ws.checkout(REPO, 1, &sha).await.unwrap();
    assert!(again.join("a.hcl").is_file());
}

#[tokio::test]
async fn checkout_of_an_unfetched_commit_says_to_fetch() {
    let origin = Origin::new();
    origin.commit("seed");
    let (_tmp, ws) = workspaces();
    let err = ws.checkout(REPO, 1, "main").await.unwrap_err().to_string();
    assert!(err.contains("acme/infra has not been fetched"), "{err}");
    ws.fetch(REPO, &origin.url(), None, &refs(&["main"]))
        .await
        .unwrap();
    let missing = "0123456789abcdef0123456789abcdef01234567";
    let err = ws.checkout(REPO, 1, missing).await.unwrap_err().to_string();
    assert!(err.contains("acme/infra"), "{err}");
    assert!(err.contains("fetch it"), "{err}");
}

#[tokio::test]
async fn forget_removes_the_checkout() {
    let origin = Origin::new();
    origin.write("a.hcl", "a\n");
    let sha = origin.commit("seed");
    let (_tmp, ws) = workspaces();
    let mirror = ws
        .fetch(REPO, &origin.url(), None, &refs(&["main"]))
        .await
        .unwrap();
    let dir = ws.checkout(REPO, 4, &sha).await.unwrap();
    fs::create_dir_all(dir.join(".terraform")).unwrap();
    ws.forget(REPO, 4).await.unwrap();
    assert!(!dir.exists());
    // The mirror no longer lists it as a worktree.
    let list = git(&mirror, &["worktree", "list", "--porcelain"]);
    assert!(!list.contains("pr-4"), "{list}");
    // Forgetting twice, or a PR never checked out, is fine.
    ws.forget(REPO, 4).await.unwrap();
    ws.forget(REPO, 5).await.unwrap();
    ws.forget("acme/never-fetched", 1).await.unwrap();
}

#[tokio::test]
async fn changes_is_the_merge_base_diff() {
    let origin = Origin::new();
    origin.write("live/vpc/terragrunt.hcl", "vpc\n");
    origin.write("live/db/terragrunt.hcl", "db\n");
    let branch_point = origin.commit("seed");
    origin.switch("feature");
    origin.write("live/vpc/terragrunt.hcl", "vpc changed\n");
    origin.write("live/new/terragrunt.hcl", "new\n");
    let head = origin.commit("feature");
    origin.switch_existing("main");
    origin.write("live/db/terragrunt.hcl", "db changed on main\n");
    let base = origin.commit("main moves on");
    git(&origin.bare, &["update-ref", "refs/pull/3/head", &head]);
    let (_tmp, ws) = workspaces();
    ws.fetch(
        REPO,
        &origin.url(),
        None,
        &refs(&["refs/pull/3/head", "main"]),
    )
    .await
    .unwrap();

    let changes = ws.changes(REPO, &base, &head).unwrap();
    assert_eq!(changes.base, branch_point);
    assert_eq!(changes.head, head);
    assert_eq!(
        changes.changes,
        vec![
            Change::Added("live/new/terragrunt.hcl".into()),
            Change::Modified("live/vpc/terragrunt.hcl".into()),
        ]
    );
    // Refs resolve too.
    let by_ref = ws.changes(REPO, "main", "refs/pull/3/head").unwrap();
    assert_eq!(by_ref, changes);

    let err = ws
        .changes(REPO, &base, "no-such-branch")
        .unwrap_err()
        .to_string();
    assert!(err.contains("acme/infra"), "{err}");
    assert!(err.contains("no-such-branch"), "{err}");
}

#[tokio::test]
async fn config_is_read_from_the_given_commit() {
    let origin = Origin::new();
    origin.write("a.hcl", "a\n");
    let without = origin.commit("no config");
    origin.write(".cascade.yaml", "autoplan: true\n");
    let base = origin.commit("config");
    origin.switch("feature");
    origin.write(".cascade.yaml", "autoplan: false\n");
    let head = origin.commit("PR edits the config");
    git(&origin.bare, &["update-ref", "refs/pull/1/head", &head]);
    let (_tmp, ws) = workspaces();
    ws.fetch(
        REPO,
        &origin.url(),
        None,
        &refs(&["main", "refs/pull/1/head"]),
    )
    .await
    .unwrap();

    assert_eq!(
        ws.config_at(REPO, &base).unwrap().as_deref(),
        Some("autoplan: true\n")
    );
    assert_eq!(
        ws.config_at(REPO, &head).unwrap().as_deref(),
        Some("autoplan: false\n")
    );
    assert_eq!(ws.config_at(REPO, &without).unwrap(), None);
}

#[tokio::test]
async fn config_that_is_a_directory_is_an_error() {
    let origin = Origin::new();
    origin.write(".cascade.yaml/x", "x\n");
    let sha = origin.commit("odd");
    let (_tmp, ws) = workspaces();
    ws.fetch(REPO, &origin.url(), None, &refs(&["main"]))
        .await
        .unwrap();
    let err = ws.config_at(REPO, &sha).unwrap_err().to_string();
    assert!(err.contains(".cascade.yaml of acme/infra"), "{err}");
    assert!(err.contains("not a regular file"), "{err}");
}

#[tokio::test]
async fn tree_materialises_a_commit_once() {
    let origin = Origin::new();
    origin.write("live/old/terragrunt.hcl", "old\n");
    let base = origin.commit("seed");
    origin.remove("live/old/terragrunt.hcl");
    origin.write("live/new/terragrunt.hcl", "new\n");
    let head = origin.commit("delete old");
    let (tmp, ws) = workspaces();
    ws.fetch(REPO, &origin.url(), None, &refs(&["main"]))
        .await
        .unwrap();

    // An abbreviated sha resolves to the full one.
    let dir = ws.tree(REPO, &base[..12]).unwrap();
    assert_eq!(
        dir,
        tmp.path().join("workspaces/trees/acme/infra").join(&base)
    );
    assert_eq!(
        fs::read_to_string(dir.join("live/old/terragrunt.hcl")).unwrap(),
        "old\n"
    );
    assert!(!dir.join("live/new").exists());
    assert!(!dir.join(".git").exists());

    // Reused as it is.
    fs::write(dir.join("marker"), "m").unwrap();
    assert_eq!(ws.tree(REPO, &base).unwrap(), dir);
    assert!(dir.join("marker").exists());

    let head_dir = ws.tree(REPO, &head).unwrap();
    assert!(head_dir.join("live/new/terragrunt.hcl").is_file());
    // No scratch directories left beside them.
    let names: Vec<String> = fs::read_dir(dir.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[tokio::test]
async fn invalid_repository_names_are_refused() {
    let origin = Origin::new();
    origin.commit("seed");
    let (tmp, ws) = workspaces();
    for bad in ["../x", "a/b/c", "x", "a/..", "../../etc", "a/b\n", "/abs"] {
        let err = ws
            .fetch(bad, &origin.url(), None, &refs(&["main"]))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("invalid repository name"), "{bad}: {err}");
        assert!(ws.checkout(bad, 1, "main").await.is_err());
        assert!(ws.forget(bad, 1).await.is_err());
        assert!(ws.changes(bad, "a", "b").is_err());
        assert!(ws.config_at(bad, "a").is_err());
        assert!(ws.tree(bad, "a").is_err());
    }
    // Nothing was written anywhere, inside the root or beside it.
    let entries: Vec<_> = fs::read_dir(tmp.path()).unwrap().collect();
    assert!(entries.is_empty(), "{entries:?}");
}

/// The origin of `url` (an http(s) URL), as a forge configured there has it.
fn origin_of(url: &str) -> GitOrigin {
    GitOrigin::for_gitlab(url).unwrap()
}

/// `url` as a clone URL at its own origin.
fn http(url: &str) -> CloneUrl {
    origin_of(url).clone_url(url).unwrap()
}

fn credential(origin: &GitOrigin, token: &str) -> GitCredential {
    GitCredential::new(origin.clone(), token)
}

#[tokio::test]
async fn the_token_never_appears_in_an_error() {
    let (_tmp, ws) = workspaces();
    let url = "https://127.0.0.1:9/x.git";
    let err = ws
        .fetch(
            REPO,
            &http(url),
            Some(&credential(&origin_of(url), "ghs_SECRET")),
            &refs(&["main"]),
        )
        .await
        .unwrap_err();
    let text = format!("{err:#} {err:?}");
    assert!(text.contains("cannot fetch acme/infra"), "{text}");
    assert!(!text.contains("ghs_SECRET"), "{text}");
    // Nor its base64 form (the header value).
    assert!(
        !text.contains("eC1hY2Nlc3MtdG9rZW46Z2hzX1NFQ1JFVA"),
        "{text}"
    );

    // A URL with credentials of its own is no clone URL, and the refusal does not echo them.
    let err = origin_of(url)
        .clone_url("https://x-access-token:ghs_INURL@127.0.0.1:9/x.git")
        .unwrap_err();
    let text = format!("{err:#}");
    assert!(!text.contains("ghs_INURL"), "{text}");
}

#[tokio::test]
async fn a_credential_is_never_sent_to_another_origin() {
    let stranger = Recorder::not_found();
    let url = format!("{}/acme/infra.git", stranger.url);
    let (_tmp, ws) = workspaces();
    let github = origin_of("https://github.com");
    let err = ws
        .fetch(
            REPO,
            &http(&url),
            Some(&credential(&github, "ghs_SECRET")),
            &refs(&["main"]),
        )
        .await
        .unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains("not https://github.com"), "{text}");
    assert!(!text.contains("ghs_SECRET"), "{text}");
    // git never started: the listener got nothing.
    assert!(stranger.heads().is_empty(), "{:?}", stranger.heads());
}

#[tokio::test]
async fn fetch_refuses_refspecs_that_look_like_options() {
    let origin = Origin::new();
    origin.commit("seed");
    let (_tmp, ws) = workspaces();
    let err = ws
        .fetch(
            REPO,
            &origin.url(),
            None,
            &refs(&["--upload-pack=touch /tmp/pwned"]),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("refspec"), "{err}");
    // No clone URL can be an option or another transport (ext:: runs commands).
    for bad in ["--upload-pack=x", "ext::sh -c true"] {
        assert!(CloneUrl::local(bad).is_err(), "{bad}");
        assert!(
            origin_of("https://github.com").clone_url(bad).is_err(),
            "{bad}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_fetches_of_one_repository_both_succeed() {
    let origin = Origin::new();
    for i in 0..20 {
        origin.write(&format!("f{i}.hcl"), &format!("{i}\n"));
    }
    let sha = origin.commit("seed");
    let (_tmp, ws) = workspaces();
    let url = origin.url();
    let specs = refs(&["main"]);
    let (a, b) = tokio::join!(
        ws.fetch(REPO, &url, None, &specs),
        ws.fetch(REPO, &url, None, &specs)
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a, b);
    assert_eq!(mirror_rev(&a, "refs/heads/main"), sha);

    // And through clones of the handle on separate tasks, with a checkout in between.
    let tasks: Vec<_> = (0..4)
        .map(|n| {
            let ws = ws.clone();
            let url = url.clone();
            let sha = sha.clone();
            tokio::spawn(async move {
                ws.fetch(REPO, &url, None, &refs(&["main"])).await?;
                ws.checkout(REPO, n, &sha).await
            })
        })
        .collect();
    for task in tasks {
        let dir = task.await.unwrap().unwrap();
        assert!(dir.join("f0.hcl").is_file());
    }
}

#[tokio::test]
async fn different_repositories_get_different_mirrors() {
    let one = Origin::new();
    one.write("one", "1\n");
    let sha_one = one.commit("one");
    let two = Origin::new();
    two.write("two", "2\n");
    let sha_two = two.commit("two");
    let (_tmp, ws) = workspaces();
    let (url_one, url_two, specs) = (one.url(), two.url(), refs(&["main"]));
    let (m1, m2) = tokio::join!(
        ws.fetch("acme/one", &url_one, None, &specs),
        ws.fetch("Acme/Two", &url_two, None, &specs)
    );
    let (m1, m2) = (m1.unwrap(), m2.unwrap());
    assert_ne!(m1, m2);
    assert!(m2.ends_with("mirrors/acme/two.git"));
    assert_eq!(mirror_rev(&m1, "main"), sha_one);
    assert_eq!(mirror_rev(&m2, "main"), sha_two);
    // Names are case-insensitive, as on GitHub.
    assert_eq!(ws.config_at("ACME/TWO", &sha_two).unwrap(), None);
}

#[tokio::test]
async fn the_token_travels_as_a_basic_auth_header() {
    let listener = Recorder::not_found();
    let url = format!("{}/acme/infra.git", listener.url);
    let (_tmp, ws) = workspaces();
    let err = ws
        .fetch(
            REPO,
            &http(&url),
            Some(&credential(&origin_of(&url), "ghs_SECRET")),
            &refs(&["main"]),
        )
        .await
        .unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains("cannot fetch acme/infra"), "{text}");
    assert!(!text.contains("ghs_SECRET"), "{text}");
    let head = listener.heads().remove(0);
    let request_line = head.lines().next().unwrap();
    assert!(
        request_line.starts_with("GET /acme/infra.git/info/refs"),
        "{head}"
    );
    assert!(!request_line.contains("ghs_SECRET"), "{head}");
    assert!(
        head.lines()
            .any(|l| l
                .eq_ignore_ascii_case("authorization: Basic eC1hY2Nlc3MtdG9rZW46Z2hzX1NFQ1JFVA==")),
        "{head}"
    );
}

#[tokio::test]
async fn a_hung_fetch_times_out() {
    let listener = Recorder::hanging();
    let url = format!("{}/acme/infra.git", listener.url);
    let (_tmp, ws) = workspaces();
    let ws = ws.with_timeouts(
        std::time::Duration::from_secs(1),
        std::time::Duration::from_secs(60),
    );
    let started = std::time::Instant::now();
    let err = ws
        .fetch(
            REPO,
            &http(&url),
            Some(&credential(&origin_of(&url), "ghs_SECRET")),
            &refs(&["main"]),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert!(err.contains("cannot fetch acme/infra"), "{err}");
    assert!(err.contains("did not finish within 1 s"), "{err}");
    // The repository is usable again: the lock was released.
    let origin = Origin::new();
    origin.commit("seed");
    ws.fetch(REPO, &origin.url(), None, &refs(&["main"]))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_gitlab_project_with_subgroups_gets_its_own_mirror_beside_githubs() {
    let github = Origin::new();
    github.write("forge", "github\n");
    let sha_github = github.commit("github");
    let gitlab = Origin::new();
    gitlab.write("forge", "gitlab\n");
    let sha_gitlab = gitlab.commit("gitlab");
    let (tmp, ws) = workspaces();
    let specs = refs(&["main"]);
    // The same `acme/infra` path on both forges, and a GitLab project nested one deeper.
    let m_github = ws
        .fetch("acme/infra", &github.url(), None, &specs)
        .await
        .unwrap();
    let m_gitlab = ws
        .fetch("gitlab:acme/infra", &gitlab.url(), None, &specs)
        .await
        .unwrap();
    let m_nested = ws
        .fetch("gitlab:Acme/Platform/Infra", &gitlab.url(), None, &specs)
        .await
        .unwrap();
    let root = tmp.path().join("workspaces/mirrors");
    assert_eq!(m_github, root.join("acme/infra.git"));
    assert_eq!(m_gitlab, root.join("@gitlab/acme/infra.git"));
    assert_eq!(m_nested, root.join("@gitlab/acme/platform/infra.git"));
    assert_eq!(mirror_rev(&m_github, "main"), sha_github);
    assert_eq!(mirror_rev(&m_gitlab, "main"), sha_gitlab);
    // Checkouts and trees are apart too, and a nested project's checkout is not inside
    // its parent group's project.
    let c_github = ws.checkout("acme/infra", 1, &sha_github).await.unwrap();
    let c_gitlab = ws
        .checkout("gitlab:acme/infra", 1, &sha_gitlab)
        .await
        .unwrap();
    let c_nested = ws
        .checkout("gitlab:acme/platform/infra", 1, &sha_gitlab)
        .await
        .unwrap();
    assert_eq!(
        fs::read_to_string(c_github.join("forge")).unwrap(),
        "github\n"
    );
    assert_eq!(
        fs::read_to_string(c_gitlab.join("forge")).unwrap(),
        "gitlab\n"
    );
    assert!(
        !c_nested.starts_with(&c_gitlab),
        "{c_nested:?} in {c_gitlab:?}"
    );
    assert_ne!(
        ws.tree("acme/infra", &sha_github).unwrap(),
        ws.tree("gitlab:acme/infra", &sha_gitlab).unwrap()
    );
    // Names are case-insensitive on GitLab too; forgetting one leaves the others.
    ws.forget("gitlab:ACME/infra", 1).await.unwrap();
    assert!(!c_gitlab.exists());
    assert!(c_github.join("forge").is_file() && c_nested.join("forge").is_file());
}

#[tokio::test]
async fn invalid_gitlab_project_paths_are_refused_before_anything_is_written() {
    let origin = Origin::new();
    origin.commit("seed");
    let (tmp, ws) = workspaces();
    for bad in [
        "gitlab:infra",
        "gitlab:acme/../../etc",
        "gitlab:acme//infra",
        "gitlab:acme/infra.git",
        "gitlab:acme/-upload-pack",
        "gitlab:acme/in fra",
        "gitlab:/abs/x",
    ] {
        let err = ws
            .fetch(bad, &origin.url(), None, &refs(&["main"]))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("invalid GitLab project"), "{bad}: {err}");
        assert!(ws.checkout(bad, 1, "main").await.is_err());
        assert!(ws.forget(bad, 1).await.is_err());
        assert!(ws.tree(bad, "a").is_err());
    }
    let entries: Vec<_> = fs::read_dir(tmp.path()).unwrap().collect();
    assert!(entries.is_empty(), "{entries:?}");
}
