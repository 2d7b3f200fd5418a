//! `cascade::git` against real repositories built with the git CLI in temp dirs.

use cascade::git::{self, Change};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use tempfile::TempDir;

/// A scratch repository on branch `main`, isolated from the user's git config.
struct Repo {
    dir: TempDir,
}

impl Repo {
    fn new() -> Repo {
        let repo = Repo {
            dir: TempDir::new().unwrap(),
        };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(self.path())
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

    fn write(&self, file: &str, content: &str) {
        let path = self.path().join(file);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    fn commit(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }
}

/// Text long enough for rename detection to see a moved file as similar.
fn body(seed: &str) -> String {
    (0..40).map(|i| format!("{seed} line {i}\n")).collect()
}

fn seeded() -> Repo {
    let repo = Repo::new();
    repo.write("live/vpc/terragrunt.hcl", &body("vpc"));
    repo.write("live/app/terragrunt.hcl", &body("app"));
    repo.write("live/db/terragrunt.hcl", &body("db"));
    repo.write("modules/net/main.tf", &body("net"));
    repo.write("root.hcl", &body("root"));
    repo.commit("seed");
    repo
}

#[test]
fn reports_modify_add_delete_and_rename() {
    let repo = seeded();
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.write("live/vpc/terragrunt.hcl", &body("vpc changed"));
    repo.write("live/cache/terragrunt.hcl", &body("cache"));
    fs::remove_file(repo.path().join("live/db/terragrunt.hcl")).unwrap();
    fs::create_dir_all(repo.path().join("modules/network")).unwrap();
    fs::rename(
        repo.path().join("modules/net/main.tf"),
        repo.path().join("modules/network/main.tf"),
    )
    .unwrap();
    let head = repo.commit("feature");

    let set = git::changed_files(repo.path(), "main", "feature").unwrap();
    assert_eq!(set.head, head);
    assert_eq!(set.base, repo.git(&["rev-parse", "main"]));
    assert_eq!(
        set.changes,
        vec![
            Change::Added("live/cache/terragrunt.hcl".into()),
            Change::Deleted("live/db/terragrunt.hcl".into()),
            Change::Modified("live/vpc/terragrunt.hcl".into()),
            Change::Renamed {
                from: "modules/net/main.tf".into(),
                to: "modules/network/main.tf".into()
            },
        ]
    );
    assert_eq!(
        set.paths(),
        vec![
            "live/cache/terragrunt.hcl",
            "live/db/terragrunt.hcl",
            "live/vpc/terragrunt.hcl",
            "modules/net/main.tf",
            "modules/network/main.tf",
        ]
    );
}

#[test]
fn rename_with_edits_is_still_a_rename() {
    let repo = seeded();
    repo.git(&["checkout", "-q", "-b", "feature"]);
    fs::remove_file(repo.path().join("root.hcl")).unwrap();
    repo.write("common.hcl", &(body("root") + "one more line\n"));
    repo.commit("move and edit");

    let set = git::changed_files(repo.path(), "main", "HEAD").unwrap();
    assert_eq!(
        set.changes,
        vec![Change::Renamed {
            from: "root.hcl".into(),
            to: "common.hcl".into()
        }]
    );
    assert_eq!(set.changes[0].paths(), vec!["root.hcl", "common.hcl"]);
}

#[test]
fn diffs_against_the_merge_base_not_the_base_tip() {
    let repo = seeded();
    let branch_point = repo.git(&["rev-parse", "HEAD"]);
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.write("live/app/terragrunt.hcl", &body("app on feature"));
    repo.commit("feature work");
    repo.git(&["checkout", "-q", "main"]);
    repo.write("live/vpc/terragrunt.hcl", &body("vpc on main"));
    repo.write("live/new-on-main/terragrunt.hcl", &body("new"));
    repo.commit("main moved on");

    let set = git::changed_files(repo.path(), "main", "feature").unwrap();
    assert_eq!(set.base, branch_point);
    assert_eq!(
        set.changes,
        vec![Change::Modified("live/app/terragrunt.hcl".into())]
    );
}

#[test]
fn accepts_any_revspec_and_works_from_a_subdirectory() {
    let repo = seeded();
    let first = repo.git(&["rev-parse", "HEAD"]);
    repo.git(&["tag", "v1"]);
    repo.write("live/app/extra.tf", "x");
    repo.commit("two");
    repo.write("live/app/extra.tf", "y");
    repo.commit("three");

    let sub = repo.path().join("live/app");
    let set = git::changed_files(&sub, "v1", "HEAD").unwrap();
    assert_eq!(set.base, first);
    assert_eq!(set.changes, vec![Change::Added("live/app/extra.tf".into())]);
    let set = git::changed_files(&sub, "HEAD~1", &first[..10]).unwrap();
    // Head is an ancestor of base: the merge-base is head itself, so nothing changed.
    assert_eq!(set.base, first);
    assert!(set.changes.is_empty());
}

#[test]
fn unknown_revision_says_what_to_do() {
    let repo = seeded();
    let err = git::changed_files(repo.path(), "mian", "HEAD").unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown revision `mian`: check the branch name or fetch it"
    );
    let err = git::resolve(repo.path(), "origin/feature").unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown revision `origin/feature`: check the branch name or fetch it"
    );
    let err = git::materialize(repo.path(), "nope", &repo.path().join("x")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown revision `nope`: check the branch name or fetch it"
    );
}

#[test]
fn a_revision_that_is_not_a_commit_is_refused() {
    let repo = seeded();
    let err = git::resolve(repo.path(), "HEAD:root.hcl").unwrap_err();
    assert!(
        err.to_string().contains("names a blob, not a commit"),
        "{err}"
    );
}

#[test]
fn unrelated_histories_are_refused() {
    let repo = seeded();
    repo.git(&["checkout", "-q", "--orphan", "other"]);
    repo.write("other.txt", "x");
    repo.commit("unrelated");
    let err = git::changed_files(repo.path(), "main", "other").unwrap_err();
    assert!(err.to_string().contains("share no history"), "{err}");
}

#[test]
fn outside_a_repository() {
    let dir = TempDir::new().unwrap();
    assert_eq!(git::toplevel(dir.path()), None);
    let err = git::resolve(dir.path(), "HEAD").unwrap_err();
    assert!(
        err.to_string().starts_with("no git repository at or above"),
        "{err}"
    );
}

#[test]
fn toplevel_searches_upward() {
    let repo = seeded();
    let top: PathBuf = repo.path().canonicalize().unwrap();
    let found = git::toplevel(&repo.path().join("live/vpc")).unwrap();
    assert_eq!(found.canonicalize().unwrap(), top);
    assert!(!found.to_string_lossy().ends_with('/'));
}

#[test]
fn resolve_gives_the_full_sha() {
    let repo = seeded();
    let first = repo.git(&["rev-parse", "HEAD"]);
    repo.commit("empty");
    assert_eq!(git::resolve(repo.path(), "HEAD~1").unwrap(), first);
    assert_eq!(git::resolve(repo.path(), &first[..7]).unwrap(), first);
    assert_eq!(
        git::resolve(repo.path(), "main").unwrap(),
        repo.git(&["rev-parse", "main"])
    );
}

#[test]
fn materialize_writes_an_older_revision_and_leaves_the_repo_alone() {
    let repo = seeded();
    let old = repo.git(&["rev-parse", "HEAD"]);
    fs::remove_file(repo.path().join("live/db/terragrunt.hcl")).unwrap();
    repo.write("live/vpc/terragrunt.hcl", "new vpc");
    repo.commit("delete db");
    // Uncommitted work in the checkout must survive, and so must the index.
    repo.write("live/app/terragrunt.hcl", "uncommitted edit");
    repo.write("live/app/staged.tf", "staged");
    repo.git(&["add", "live/app/staged.tf"]);
    let head_before = repo.git(&["rev-parse", "HEAD"]);
    let status_before = repo.git(&["status", "--porcelain"]);
    let index_before = fs::read(repo.path().join(".git/index")).unwrap();

    let out = TempDir::new().unwrap();
    let dest = out.path().join("base");
    git::materialize(repo.path(), &old, &dest).unwrap();

    assert_eq!(
        fs::read_to_string(dest.join("live/db/terragrunt.hcl")).unwrap(),
        body("db")
    );
    assert_eq!(
        fs::read_to_string(dest.join("live/vpc/terragrunt.hcl")).unwrap(),
        body("vpc")
    );
    assert_eq!(
        fs::read_to_string(dest.join("live/app/terragrunt.hcl")).unwrap(),
        body("app")
    );
    assert_eq!(
        fs::read_to_string(dest.join("modules/net/main.tf")).unwrap(),
        body("net")
    );
    assert!(!dest.join("live/app/staged.tf").exists());
    assert!(!dest.join(".git").exists());

    assert_eq!(repo.git(&["rev-parse", "HEAD"]), head_before);
    assert_eq!(repo.git(&["status", "--porcelain"]), status_before);
    assert_eq!(
        fs::read(repo.path().join(".git/index")).unwrap(),
        index_before
    );
    assert_eq!(
        fs::read_to_string(repo.path().join("live/app/terragrunt.hcl")).unwrap(),
        "uncommitted edit"
    );
    assert!(!repo.path().join("live/db/terragrunt.hcl").exists());
}

#[test]
fn materialize_works_from_a_bare_repository() {
    let repo = seeded();
    let bare = TempDir::new().unwrap();
    let bare_path = bare.path().join("mirror.git");
    repo.git(&[
        "clone",
        "-q",
        "--bare",
        repo.path().to_str().unwrap(),
        bare_path.to_str().unwrap(),
    ]);
    assert_eq!(git::toplevel(&bare_path), None);

    let dest = TempDir::new().unwrap();
    git::materialize(&bare_path, "main", dest.path()).unwrap();
    assert_eq!(
        fs::read_to_string(dest.path().join("root.hcl")).unwrap(),
        body("root")
    );
}

#[test]
fn materialize_refuses_a_non_empty_directory() {
    let repo = seeded();
    let dest = TempDir::new().unwrap();
    fs::write(dest.path().join("leftover"), "x").unwrap();
    let err = git::materialize(repo.path(), "HEAD", dest.path()).unwrap_err();
    assert!(
        err.to_string().contains("the directory is not empty"),
        "{err}"
    );
}

#[test]
fn paths_relative_to_a_discovery_subdirectory() {
    let repo = seeded();
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.write("live/vpc/terragrunt.hcl", "changed");
    repo.write("modules/net/main.tf", "changed");
    repo.write("root.hcl", "changed");
    repo.commit("feature");
    let set = git::changed_files(repo.path(), "main", "feature").unwrap();
    assert_eq!(
        set.paths_relative_to("live"),
        vec![
            "../modules/net/main.tf",
            "../root.hcl",
            "vpc/terragrunt.hcl"
        ]
    );
    assert_eq!(set.paths_relative_to("./"), set.paths());
    assert_eq!(
        set.paths_relative_to("live/vpc/"),
        vec![
            "../../modules/net/main.tf",
            "../../root.hcl",
            "terragrunt.hcl"
        ]
    );
}
