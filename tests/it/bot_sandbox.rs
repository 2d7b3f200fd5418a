//! The sandbox through `cascade serve`, as an attacker with push access tries it: the
//! real binary over the fake GitHub, a pull request whose terraform reads the
//! server's environment, the App's key file, the database and another pull
//! request's checkout, base64-encoded into a resource as the issue found them
//! posted. Each unit fails with the class of what was refused; nothing of those
//! files reaches a comment, the check run, a log or the database. A server
//! without Landlock (the test hook) plans nothing and says why; `--sandbox
//! landlock` there does not start.

use crate::support::bot_world;
use crate::support::fake_github;

use bot_world::{REPO, World, git_out, push, serve_binary, world_configured, world_unserved};
use fake_github::{FileChange, PrSpec, app_key};
use std::ffi::OsStr;
use std::path::Path;

/// A pull request from `branch` off the base that appends `lines[i].1` to the
/// `main.tf` of unit `lines[i].0`: its number and head.
fn open_with(w: &World, branch: &str, lines: &[(&str, String)]) -> (u64, String) {
    let dir = w.work.path();
    git_out(dir, &["checkout", "-q", "-B", branch, &w.base_sha]);
    let mut files = Vec::new();
    for (unit, text) in lines {
        let file = format!("{unit}/main.tf");
        let path = dir.join(&file);
        let old = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{old}\n{text}\n")).unwrap();
        files.push(FileChange::modified(&file));
    }
    git_out(dir, &["commit", "-qam", "read what the server holds"]);
    let head = push(w, branch);
    let n = w.fake.open_pull_request(
        REPO,
        PrSpec {
            author: "mallory".into(),
            head_ref: branch.into(),
            head_sha: head.clone(),
            base_ref: "main".into(),
            base_sha: w.base_sha.clone(),
            files,
            ..PrSpec::default()
        },
    );
    (n, head)
}

fn leak(name: &str, expr: &str) -> String {
    format!("resource \"terraform_data\" \"{name}\" {{\n  input = {expr}\n}}")
}

fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Every file under `dir`, as bytes (logs, the database, run files).
fn every_file(dir: &Path) -> Vec<(String, Vec<u8>)> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .filter(|e| !e.path().components().any(|c| c.as_os_str() == "workspaces"))
        .map(|e| {
            (
                e.path().display().to_string(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_request_reading_what_the_server_holds_gets_refusals_and_nothing_is_posted() {
    let w = world_unserved("").await;
    let (mut server, port) = serve_binary(&w, &[]).await;
    let hook = format!("http://127.0.0.1:{port}/webhooks/github");
    let served = w.data.path().join("served");
    let key = w.data.path().join("app-key.pem");
    let pid = server.id();
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let victim = "victim-marker-5e1f";
    let (n, head) = open_with(
        &w,
        "leaky",
        &[
            (
                "dev/dns",
                format!(
                    "# {victim}\n{}",
                    leak("environ", &format!("filebase64(\"/proc/{pid}/environ\")"))
                ),
            ),
            (
                "prod/dns",
                leak("key", &format!("filebase64(\"{}\")", key.display())),
            ),
            (
                "dev/monitoring",
                leak(
                    "db",
                    "filebase64(\"${path.cwd}/../../../../../../../cascade.db\")",
                ),
            ),
        ],
    );
    let opened = w.fake.pull_request_event(REPO, n, "opened");
    assert_eq!(opened.post(&hook).await.status().as_u16(), 202);
    w.until("the plan of the leaking pull request", |w| {
        w.checks_done(&head) && !w.bot_texts(n).is_empty()
    })
    .await;
    // A second pull request reads the first one's checkout.
    let (m, head_m) = open_with(
        &w,
        "snoop",
        // A unit the first pull request does not hold.
        &[(
            "global/dns",
            leak(
                "other",
                &format!("file(\"${{path.cwd}}/../../../pr-{n}/dev/dns/main.tf\")"),
            ),
        )],
    );
    let opened = w.fake.pull_request_event(REPO, m, "opened");
    assert_eq!(opened.post(&hook).await.status().as_u16(), 202);
    w.until("the plan of the snooping pull request", |w| {
        w.checks_done(&head_m) && !w.bot_texts(m).is_empty()
    })
    .await;
    server.kill().unwrap();
    server.wait().unwrap();

    let comment = w.bot_texts(n).join("\n");
    for (unit, class) in [
        ("dev/dns", "another process's files (/proc)"),
        ("prod/dns", "the GitHub App's private key"),
        ("dev/monitoring", "cascade's database"),
    ] {
        assert!(
            comment.contains(unit)
                && comment.contains(&format!("the sandbox refused reading {class}")),
            "{unit}: {comment}"
        );
    }
    let other = w.bot_texts(m).join("\n");
    assert!(
        other.contains("the sandbox refused reading another pull request's checkout"),
        "{other}"
    );
    // Nothing of what was read got anywhere: not in a comment, the check runs, a
    // log or the database.
    let secret = w.fake.webhook_secret();
    let key_body = String::from_utf8(app_key()).unwrap();
    let key_line = key_body.lines().nth(1).unwrap().to_string();
    let mut shown: Vec<(String, Vec<u8>)> = every_file(&served);
    for (number, sha) in [(n, &head), (m, &head_m)] {
        shown.push((
            format!("comments on #{number}"),
            w.bot_texts(number).join("\n").into_bytes(),
        ));
        for run in w.fake.check_runs(REPO, sha) {
            let state = run.current();
            shown.push((
                format!("check run on #{number}"),
                format!("{}\n{}\n{}", state.title, state.summary, state.text).into_bytes(),
            ));
        }
    }
    let key_path = key.display().to_string();
    let check_texts: Vec<&(String, Vec<u8>)> = shown
        .iter()
        .filter(|(p, _)| p.starts_with("check run"))
        .collect();
    assert!(
        check_texts
            .iter()
            .any(|(_, t)| contains(t, b"open <github-app-key>:")),
        "the key file is named by its label in the log tail: {:?}",
        check_texts
            .iter()
            .map(|(_, t)| String::from_utf8_lossy(t))
            .collect::<Vec<_>>()
    );
    for (_, text) in &check_texts {
        assert!(
            !contains(text, key_path.as_bytes()),
            "the key file's path got out"
        );
    }
    let needles = [
        secret.clone().into_bytes(),
        base64(format!("CASCADE_GITHUB_WEBHOOK_SECRET={secret}").as_bytes()).into_bytes()[..24]
            .to_vec(),
        key_line.clone().into_bytes(),
        base64(key_body.as_bytes()).into_bytes()[..24].to_vec(),
        base64(&environ).into_bytes()[..24.min(base64(&environ).len())].to_vec(),
        victim.as_bytes().to_vec(),
    ];
    for (place, bytes) in &shown {
        for needle in &needles {
            assert!(
                !contains(bytes, needle),
                "{place} holds {:?}",
                String::from_utf8_lossy(needle)
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_committed_with_a_pull_request_is_refused_and_never_runs() {
    let w = world_configured("", |_| {}).await;
    let dir = w.work.path();
    git_out(dir, &["checkout", "-q", "-B", "provider", &w.base_sha]);
    let main = dir.join("global/dns/main.tf");
    let old = std::fs::read_to_string(&main).unwrap();
    std::fs::write(
        &main,
        format!("{old}\nterraform {{\n  required_providers {{\n    evil = {{ source = \"example.com/acme/evil\", version = \"1.0.0\" }}\n  }}\n}}\nprovider \"evil\" {{}}\n"),
    )
    .unwrap();
    let plugin = "global/dns/terraform.d/plugins/example.com/acme/evil/1.0.0/linux_amd64";
    std::fs::create_dir_all(dir.join(plugin)).unwrap();
    let binary = dir.join(plugin).join("terraform-provider-evil_v1.0.0");
    // Were it run, it would leave a mark in its unit's directory (the one place the
    // sandbox lets it write).
    std::fs::write(&binary, "#!/bin/sh\ntouch provider-ran\nexit 1\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
    git_out(dir, &["add", "-A"]);
    git_out(dir, &["commit", "-qm", "a provider of our own"]);
    let head = push(&w, "provider");
    let n = w.fake.open_pull_request(
        REPO,
        PrSpec {
            author: "mallory".into(),
            head_ref: "provider".into(),
            head_sha: head.clone(),
            base_ref: "main".into(),
            base_sha: w.base_sha.clone(),
            files: vec![
                FileChange::modified("global/dns/main.tf"),
                FileChange::added(&format!("{plugin}/terraform-provider-evil_v1.0.0")),
            ],
            ..PrSpec::default()
        },
    );
    assert_eq!(w.send_pr(n, "opened").await, 202);
    w.until("the refusal", |w| {
        w.checks_done(&head) && !w.bot_texts(n).is_empty()
    })
    .await;
    let comment = w.bot_texts(n).join("\n");
    assert!(
        comment.contains("`global/dns/terraform.d` is a provider directory"),
        "{comment}"
    );
    let ran: Vec<_> = walkdir::WalkDir::new(w.data.path())
        .into_iter()
        .flatten()
        .filter(|e| e.file_name() == "provider-ran")
        .collect();
    assert!(ran.is_empty(), "the committed provider ran: {ran:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_landlock_plans_nothing_and_says_why() {
    // The test hook stands in for a kernel without Landlock.
    let w = world_configured("", |c| c.sandbox.assume_abi = Some(0)).await;
    let base = format!("http://{}", w.server.as_ref().unwrap().addr);
    let health = reqwest::get(format!("{base}/healthz")).await.unwrap();
    assert_eq!(health.status().as_u16(), 200, "alive all the same");
    let body = health.text().await.unwrap();
    assert!(
        body.contains("sandbox: unavailable") && body.contains("pull requests are not planned"),
        "{body}"
    );
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    assert_eq!(w.send_pr(n, "opened").await, 202);
    w.until("the refusal", |w| {
        w.checks_done(&w.head_sha) && !w.bot_texts(n).is_empty()
    })
    .await;
    let comment = w.bot_texts(n).join("\n");
    assert!(
        comment.contains("the server has no working sandbox")
            && comment.contains("`--sandbox off`")
            && comment.contains("`/plan`"),
        "{comment}"
    );
    let check = w.fake.check_runs(REPO, &w.head_sha)[0].current().clone();
    assert_eq!(check.conclusion.as_deref(), Some("failure"));
    assert!(check.title.contains("no sandbox"), "{}", check.title);
    assert!(
        !w.data.path().join("runs").exists(),
        "nothing was planned, so no run was made"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_landlock_without_landlock_does_not_start() {
    let w = world_unserved("").await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let stderr = tempfile::NamedTempFile::new().unwrap();
    let mut child = bot_world::serve_process_in(
        &w,
        w.data.path(),
        port,
        &[
            OsStr::new("--sandbox"),
            OsStr::new("landlock"),
            OsStr::new("--sandbox-assume-abi"),
            OsStr::new("0"),
        ],
        std::process::Stdio::from(stderr.reopen().unwrap()),
    );
    let status = child.wait().unwrap();
    assert!(!status.success());
    let said = std::fs::read_to_string(stderr.path()).unwrap();
    assert!(
        said.contains("--sandbox landlock") && said.contains("--sandbox auto or --sandbox off"),
        "{said}"
    );
}
