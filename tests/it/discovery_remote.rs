//! Stacks whose `unit` and `stack` blocks take a remote git `source` (issue 23): `cascade
//! graph` fetches each (repository, ref) once with the user's git into the user's cache,
//! evaluates the fetched `terragrunt.hcl` where the unit is generated, and shows the
//! commit each unit came from. The catalog is a second local repository, fetched over
//! `file://`; its units are the live-stacks example's: `service` needs `db` and `role`,
//! `role` needs `db`, each by a relative `config_path`.
//!
//! Also the failures (a ref that names nothing, a repository that cannot be reached, a
//! form cascade does not fetch) and the attacks: credentials in a source URL never shown,
//! a subdirectory that climbs out of the repository refused, a symbolic link in the
//! catalog leading out of the fetched tree never read.

use crate::support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::{git, write_file};

/// The catalog: `v1` (an annotated tag) and `main` one commit later, whose units differ
/// only in a comment. Returns its directory and the two commits.
fn catalog(tmp: &Path) -> (PathBuf, String, String) {
    let dir = tmp.join("catalog");
    write_file(
        &dir,
        "units/db/terragrunt.hcl",
        "inputs = {\n  name = values.name\n}\n",
    );
    write_file(
        &dir,
        "units/role/terragrunt.hcl",
        "dependency \"db\" {\n  config_path = \"../db\"\n}\n",
    );
    write_file(
        &dir,
        "units/service/terragrunt.hcl",
        "dependency \"db\" {\n  config_path = \"../db\"\n}\n\ndependency \"role\" {\n  config_path = \"../role\"\n}\n",
    );
    // A stack in the catalog, whose units come from the catalog too.
    let url = format!("git::file://{}", dir.display());
    write_file(
        &dir,
        "stacks/app/terragrunt.stack.hcl",
        &format!(
            "unit \"db\" {{\n  source = \"{url}//units/db?ref=v1\"\n  path   = \"db\"\n  values = {{ name = \"app\" }}\n}}\n\nunit \"role\" {{\n  source = \"{url}//units/role?ref=v1\"\n  path   = \"role\"\n}}\n"
        ),
    );
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "one"]);
    git(&dir, &["tag", "-a", "v1", "-m", "v1"]);
    let one = git(&dir, &["rev-parse", "HEAD"]);
    write_file(&dir, "units/db/README.md", "two\n");
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "two"]);
    let two = git(&dir, &["rev-parse", "HEAD"]);
    // Fetching a commit by its sha needs the server to allow it (GitHub does).
    git(&dir, &["config", "uploadpack.allowAnySHA1InWant", "true"]);
    (dir, one, two)
}

/// A temporary directory holding the catalog: (it, the catalog, its `git::file://` URL,
/// `v1`'s commit, `main`'s commit).
fn with_catalog() -> (tempfile::TempDir, PathBuf, String, String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, one, two) = catalog(tmp.path());
    let url = format!("git::file://{}", dir.display());
    (tmp, dir, url, one, two)
}

/// A live repository holding `files`, committed.
fn live(tmp: &Path, files: &[(&str, String)]) -> PathBuf {
    let dir = tmp.join("live");
    for (rel, text) in files {
        write_file(&dir, rel, text);
    }
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "live"]);
    dir
}

/// `cascade graph --format json` in `repo`, with its own cache under `tmp`.
fn graph(tmp: &Path, repo: &Path) -> (Output, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_cascade"))
        .args(["graph", "--format", "json", "--repo"])
        .arg(repo)
        .env("XDG_CACHE_HOME", tmp.join("cache"))
        .env("CHECKPOINT_DISABLE", "1")
        .output()
        .unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out, json)
}

fn unit<'j>(json: &'j Value, path: &str) -> &'j Value {
    json["units"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["path"] == path)
        .unwrap_or_else(|| panic!("no unit {path} in {json:#}"))
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| a.iter().map(|v| v.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// The wave (from 0) `path` is in.
fn wave_of(json: &Value, path: &str) -> usize {
    json["waves"]
        .as_array()
        .unwrap()
        .iter()
        .position(|w| strings(w).iter().any(|p| p == path))
        .unwrap_or_else(|| panic!("{path} in no wave: {json:#}"))
}

/// The problems about `unit`, as text.
fn errors_of(json: &Value, unit: &str) -> String {
    json["errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["unit"] == unit)
        .map(|e| e["message"].as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn stack(units: &[(&str, String, &str)]) -> String {
    units
        .iter()
        .map(|(name, source, extra)| {
            format!(
                "unit \"{name}\" {{\n  source = \"{source}\"\n  path   = \"{name}\"\n{extra}}}\n\n"
            )
        })
        .collect()
}

/// The same three units from a tag, a branch and a commit, each through `//units/<name>`:
/// the fetched configurations give their edges and waves, and each unit shows the commit
/// its ref resolved to. Nothing of the fetched tree is listed as a file the unit reads.
#[test]
fn units_from_a_tag_a_branch_and_a_sha_get_their_edges_waves_and_commits() {
    let (tmp, catalog, url, one, two) = with_catalog();
    let repo = live(
        tmp.path(),
        &[(
            "prod/terragrunt.stack.hcl",
            stack(&[
                (
                    "db",
                    format!("{url}//units/db?ref=main"),
                    "  values = { name = \"prod\" }\n",
                ),
                ("role", format!("{url}//units/role?ref={one}"), ""),
                ("service", format!("{url}//units/service?ref=v1"), ""),
            ]),
        )],
    );
    let (out, json) = graph(tmp.path(), &repo);
    assert!(out.status.success(), "{json:#}");
    let (db, role, service) = (
        "prod/.terragrunt-stack/db",
        "prod/.terragrunt-stack/role",
        "prod/.terragrunt-stack/service",
    );
    assert_eq!(strings(&unit(&json, role)["dependencies"]), [db]);
    assert_eq!(strings(&unit(&json, service)["dependencies"]), [db, role]);
    assert!(wave_of(&json, db) < wave_of(&json, role));
    assert!(wave_of(&json, role) < wave_of(&json, service));
    assert_eq!(unit(&json, db)["unresolved"], Value::Null, "{json:#}");
    let shown_url = format!("file://{}", catalog.display());
    for (path, reference, commit) in [
        (db, "main", &two),
        (role, &one[..], &one),
        (service, "v1", &one),
    ] {
        assert_eq!(
            unit(&json, path)["sources"],
            serde_json::json!([{"url": shown_url, "ref": reference, "commit": commit}]),
            "{path}"
        );
        // What it reads in the repository: the stack file, never the cache.
        assert_eq!(
            strings(&unit(&json, path)["reads"]),
            ["prod/terragrunt.stack.hcl"],
            "{path}"
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains(".cascade-sources") && !text.contains("/cache/"),
        "{text}"
    );
}

/// A `stack` block with a remote source recurses: its units (remote too) are generated
/// under it, with their edges, and each names both sources.
#[test]
fn a_nested_remote_stack_generates_its_units() {
    let (tmp, catalog, url, one, _) = with_catalog();
    let repo = live(
        tmp.path(),
        &[(
            "prod/terragrunt.stack.hcl",
            format!(
                "stack \"app\" {{\n  source = \"{url}//stacks/app?ref=v1\"\n  path   = \"app\"\n}}\n"
            ),
        )],
    );
    let (out, json) = graph(tmp.path(), &repo);
    assert!(out.status.success(), "{json:#}");
    let db = "prod/.terragrunt-stack/app/.terragrunt-stack/db";
    let role = "prod/.terragrunt-stack/app/.terragrunt-stack/role";
    assert_eq!(unit(&json, "prod/.terragrunt-stack/app")["kind"], "stack");
    assert_eq!(strings(&unit(&json, role)["dependencies"]), [db]);
    let shown_url = format!("file://{}", catalog.display());
    assert_eq!(
        unit(&json, role)["sources"],
        serde_json::json!([
            {"url": shown_url, "ref": "v1", "commit": one},
            {"url": shown_url, "ref": "v1", "commit": one},
        ])
    );
}

/// What cannot be fetched leaves its unit unresolved with the reason, the URL without
/// credentials; a subdirectory climbing out and a form cascade does not fetch are refused
/// by name. The units that could be fetched are evaluated all the same.
#[test]
fn sources_that_cannot_be_fetched_make_their_units_unresolved_with_the_reason() {
    let (tmp, _, url, _, _) = with_catalog();
    let missing = tmp.path().join("nothing-here.git");
    let repo = live(
        tmp.path(),
        &[(
            "prod/terragrunt.stack.hcl",
            stack(&[
                ("db", format!("{url}//units/db?ref=v1"), "  values = { name = \"prod\" }\n"),
                ("noref", format!("{url}//units/db?ref=no-such-tag"), ""),
                ("gone", format!("git::file://{}//units/db", missing.display()), ""),
                (
                    "secret",
                    "git::https://deploy:hunter2-s3cret-token@127.0.0.1:9/acme/units.git//db?ref=v1"
                        .to_string(),
                    "",
                ),
                ("climb", format!("{url}//units/../../outside?ref=v1"), ""),
                ("bucket", "s3::https://s3.amazonaws.com/acme/units.zip".to_string(), ""),
            ]),
        )],
    );
    let (out, json) = graph(tmp.path(), &repo);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !all.contains("hunter2") && !all.contains("deploy:"),
        "{all}"
    );
    assert_eq!(
        unit(&json, "prod/.terragrunt-stack/db")["unresolved"],
        Value::Null
    );
    let expect = [
        ("noref", "ref not found"),
        ("gone", "could not reach the repository"),
        (
            "secret",
            "could not fetch git::https://127.0.0.1:9/acme/units.git//db?ref=v1",
        ),
        ("climb", "is refused"),
        ("bucket", "a form cascade does not fetch"),
    ];
    for (name, says) in expect {
        let path = format!("prod/.terragrunt-stack/{name}");
        assert_eq!(unit(&json, &path)["unresolved"], true, "{name}: {json:#}");
        let errors = errors_of(&json, &path);
        assert!(errors.contains(says), "{name}: {errors}");
    }
}

/// A symbolic link in the catalog that leads out of the fetched tree is never read: the
/// unit reading through it is unresolved, and nothing of the file outside shows.
#[test]
fn a_link_out_of_the_fetched_tree_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside/secret.hcl");
    write_file(
        tmp.path(),
        "outside/secret.hcl",
        "locals {\n  path = \"../TOPSECRET-VALUE\"\n}\n",
    );
    let dir = tmp.path().join("catalog");
    write_file(
        &dir,
        "units/leaky/terragrunt.hcl",
        "locals {\n  other = read_terragrunt_config(\"secret.hcl\")\n}\n\ndependency \"x\" {\n  config_path = local.other.locals.path\n}\n",
    );
    std::fs::create_dir_all(dir.join("units/leaky")).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("units/leaky/secret.hcl")).unwrap();
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "leaky"]);
    let repo = live(
        tmp.path(),
        &[(
            "prod/terragrunt.stack.hcl",
            stack(&[(
                "leaky",
                format!("git::file://{}//units/leaky", dir.display()),
                "",
            )]),
        )],
    );
    let (out, json) = graph(tmp.path(), &repo);
    let text = String::from_utf8_lossy(&out.stdout);
    let path = "prod/.terragrunt-stack/leaky";
    assert_eq!(unit(&json, path)["unresolved"], true, "{json:#}");
    assert!(
        errors_of(&json, path).contains("outside the repository"),
        "{json:#}"
    );
    assert!(!text.contains("TOPSECRET"), "{text}");
    assert!(
        !text.contains(&*tmp.path().join("cache").to_string_lossy()),
        "{text}"
    );
}

/// A tree fetched once is read from the cache after: with a commit for a ref, the second
/// run does not even ask the repository (it is gone by then).
#[test]
fn the_cache_serves_a_commit_without_the_repository() {
    let (tmp, catalog, url, one, _) = with_catalog();
    let repo = live(
        tmp.path(),
        &[(
            "prod/terragrunt.stack.hcl",
            stack(&[
                (
                    "db",
                    format!("{url}//units/db?ref={one}"),
                    "  values = { name = \"prod\" }\n",
                ),
                ("role", format!("{url}//units/role?ref={one}"), ""),
            ]),
        )],
    );
    let (first_out, first) = graph(tmp.path(), &repo);
    assert!(first_out.status.success(), "{first:#}");
    std::fs::rename(&catalog, tmp.path().join("moved")).unwrap();
    let (second_out, second) = graph(tmp.path(), &repo);
    assert!(second_out.status.success(), "{second:#}");
    assert_eq!(first, second);
    assert_eq!(
        strings(&unit(&second, "prod/.terragrunt-stack/role")["dependencies"]),
        ["prod/.terragrunt-stack/db"]
    );
}
