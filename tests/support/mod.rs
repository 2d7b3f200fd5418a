//! Helpers shared by the integration tests: where `../shared` is, and copies of
//! fixture trees in temporary git repositories.

pub mod bot_world;
pub mod call_log;
pub mod fake_github;
pub mod fake_gitlab;
pub mod fixture_tree;
pub mod git_http;
pub mod gitlab_world;
pub mod hostile;
pub mod html;
pub mod markdown_oracle;
pub mod merging;
pub mod postgres;
pub mod reads;
pub mod recorder;
pub mod replicas;
pub mod replies;
pub mod show_json;
pub mod terraform;
pub mod wait;

use std::path::{Path, PathBuf};
use std::process::Command;

/// What an apply of the worlds' `feature` branch (a change to `global/dns` in the bundled
/// example) applies: that unit alone. `dev/dns` and `prod/dns` read its outputs, unknown
/// until it is applied, so their plans change and the apply stops after it (`🔄 … the
/// plan changed`) for a new plan.
pub const DNS_APPLIED: [&str; 1] = ["global/dns"];

/// The units an apply result's table lists as applied or destroyed
/// (`| \`unit\` | ✅ applied | 1 added | 0.4 s |`).
pub fn applied_units(result: &str) -> Vec<String> {
    result
        .lines()
        .filter_map(|line| {
            let (unit, rest) = line.strip_prefix("| `")?.split_once("` | ")?;
            (rest.starts_with("✅ applied |") || rest.starts_with("🗑️ destroyed |"))
                .then(|| unit.to_string())
        })
        .collect()
}

/// `../shared` next to the repository (override with CASCADE_SHARED). Tests
/// fail, never skip, when it is missing.
pub fn shared() -> PathBuf {
    let dir = std::env::var_os("CASCADE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    assert!(
        dir.join("tg-fixtures").is_dir(),
        "{} has no tg-fixtures: put shared/ next to the repository",
        dir.display()
    );
    dir
}

/// A port of 127.0.0.1 that nothing listens on (at the time of asking).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The real `cascade serve` with no forge (it serves the setup page) on `port` of
/// 127.0.0.1, keeping its data in `data/served`, with no `CASCADE_*` variable of this
/// process's environment and its stdout dropped; the caller picks stderr.
pub fn setup_serve_command(data: &Path, port: u16) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cascade"));
    command
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .arg("--data-dir")
        .arg(data.join("served"))
        .stdout(std::process::Stdio::null());
    for (name, _) in std::env::vars() {
        if name.starts_with("CASCADE_") {
            command.env_remove(name);
        }
    }
    command
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
            let mut perms = std::fs::metadata(&target).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perms.set_readonly(false);
            std::fs::set_permissions(&target, perms).unwrap();
        }
    }
}

/// The text inside Markdown code blocks and the text outside them (each piece on a line of
/// its own), read by an independent parser; fails the test if a code block is left open.
pub fn markdown_code_and_rest(markdown: &str) -> (String, String) {
    use pulldown_cmark::{Event, Parser, Tag, TagEnd};
    let (mut code, mut outside) = (String::new(), String::new());
    let mut in_code = false;
    for event in Parser::new(markdown) {
        match event {
            Event::Start(Tag::CodeBlock(_)) => in_code = true,
            Event::End(TagEnd::CodeBlock) => in_code = false,
            Event::Text(t) if in_code => code.push_str(&t),
            Event::Text(t) | Event::Code(t) | Event::Html(t) | Event::InlineHtml(t) => {
                outside.push_str(&t);
                outside.push('\n');
            }
            _ => {}
        }
    }
    assert!(!in_code, "a code block is left open:\n{markdown}");
    (code, outside)
}

/// The 1-based line of the first line starting with `prefix` in `dir/.cascade.yaml`.
pub fn config_line(dir: &Path, prefix: &str) -> usize {
    let text = std::fs::read_to_string(dir.join(".cascade.yaml")).unwrap();
    text.lines()
        .position(|l| l.starts_with(prefix))
        .expect("the line is in .cascade.yaml")
        + 1
}

/// A commit on a new `branch` off `base` in the work repository `dir`, adding `files`
/// (path, text).
pub fn commit_adding(dir: &Path, base: &str, branch: &str, files: &[(&str, &str)]) {
    git(dir, &["checkout", "-q", "-B", branch, base]);
    for (file, text) in files {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", branch]);
}

/// Runs git in `dir` (fails the test if git does) and returns its output, trimmed.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A temporary git repository holding a copy of `tg-fixtures/<name>` (committed).
pub fn fixture_repo(name: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&shared().join("tg-fixtures").join(name), tmp.path());
    git(tmp.path(), &["init", "-q"]);
    git(tmp.path(), &["add", "-A"]);
    git(tmp.path(), &["commit", "-qm", "fixture"]);
    tmp
}

/// Where the real `terraform` on PATH is, for stand-ins that end by running it.
pub fn real_terraform() -> String {
    let out = std::process::Command::new("sh")
        .args(["-c", "command -v terraform"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A stand-in `terraform` in `dir` that logs each plan (its directory) and makes plans slow,
/// so a kill lands mid-plan; everything else is the real terraform. It runs in the
/// sandbox, so it logs over loopback ([`call_log::CallLog`]) to the file returned.
pub fn slow_terraform(dir: &Path) -> (PathBuf, PathBuf) {
    let log = call_log::CallLog::start(&dir.join("invocations.log"));
    let script = dir.join("terraform");
    let real = real_terraform();
    std::fs::write(
        &script,
        format!(
            "#!/bin/bash\n{}if [ \"$1\" = plan ]; then log_call \"$PWD\"; sleep 1; fi\nexec {} \"$@\"\n",
            log.bash_function(),
            real
        ),
    )
    .unwrap();
    let log = log.path().to_path_buf();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script, log)
}

/// `count` `terraform_data` resources with long inputs: a unit's plan of about 20,000
/// characters once rendered.
pub fn big_module(count: usize) -> String {
    (0..count)
        .map(|i| {
            format!(
                "resource \"terraform_data\" \"filler_{i}\" {{\n  input = \"{}\"\n}}\n",
                "x".repeat(120)
            )
        })
        .collect()
}

/// A copy of the bundled example (`examples/live`) in a fresh git repository, one commit.
/// Asserts terraform is on PATH: the tests using it plan and apply for real.
pub fn example_repo() -> tempfile::TempDir {
    assert!(
        Command::new("terraform")
            .arg("version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "terraform must be on PATH: these tests plan and apply for real"
    );
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/live"),
        tmp.path(),
    );
    git(tmp.path(), &["init", "-q"]);
    git(tmp.path(), &["add", "-A"]);
    git(tmp.path(), &["commit", "-qm", "example"]);
    tmp
}

/// The plan id a plan comment (or `cascade plan --format markdown`) heads with.
pub fn plan_id_of(comment: &str) -> String {
    comment
        .lines()
        .find_map(|l| l.strip_prefix("### cascade plan `"))
        .and_then(|rest| rest.strip_suffix('`'))
        .expect("the plan id")
        .to_string()
}

/// Every file under `dir` (recursively) whose name ends `.<ext>`.
pub fn files_with_extension(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_with_extension(&path, ext));
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
    out
}

/// Writes `text` to `rel` under `root`, making the directories it needs.
pub fn write_file(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Runs `program ARGS…` in `dir` with terraform's automation settings, to the end.
pub fn run_in(program: &str, dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("CHECKPOINT_DISABLE", "1")
        .env("TF_IN_AUTOMATION", "1")
        .output()
        .unwrap()
}

/// `cascade ARGS…` run in `dir` as a user runs it (stderr a pipe, not a terminal): its
/// exit status, stdout and stderr.
pub fn cascade_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = run_in(env!("CARGO_BIN_EXE_cascade"), dir, args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A command's stdout as JSON; panics with stdout and stderr when it is not.
pub fn stdout_json(out: &std::process::Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// A bare origin (`<dir>/infra.git`) whose `main` has one commit and whose `feature`
/// adds `people.len()` more, commit `i` written by `people[i]` as (author, committer),
/// each `Name <email>`: (dir, origin, main's sha, feature's sha). One `git fast-import`,
/// however many commits.
pub fn origin_with_commits(
    people: &[(&str, &str)],
) -> (tempfile::TempDir, PathBuf, String, String) {
    use std::io::Write as _;
    let tmp = tempfile::tempdir().unwrap();
    let origin = tmp.path().join("infra.git");
    git(
        tmp.path(),
        &["init", "-q", "--bare", origin.to_str().unwrap()],
    );
    let mut stream = String::new();
    let mut commit = |branch: &str, mark: usize, author: &str, committer: &str| {
        let from = if mark > 1 {
            format!("from :{}\n", mark - 1)
        } else {
            String::new()
        };
        let (message, content) = (format!("commit {mark}"), format!("# {mark}\n"));
        stream.push_str(&format!(
            "commit refs/heads/{branch}\nmark :{mark}\nauthor {author} 1767603600 +0000\n\
             committer {committer} 1767603600 +0000\ndata {}\n{message}\n{from}\
             M 644 inline main.tf\ndata {}\n{content}\n",
            message.len(),
            content.len()
        ));
    };
    commit("main", 1, "t <t@example.com>", "t <t@example.com>");
    for (i, (author, committer)) in people.iter().enumerate() {
        commit("feature", i + 2, author, committer);
    }
    let mut import = Command::new("git")
        .arg("-C")
        .arg(&origin)
        .args(["fast-import", "--quiet"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    import
        .stdin
        .take()
        .unwrap()
        .write_all(stream.as_bytes())
        .unwrap();
    assert!(import.wait().unwrap().success(), "git fast-import");
    let main = git(&origin, &["rev-parse", "main"]);
    let feature = git(&origin, &["rev-parse", "feature"]);
    (tmp, origin, main, feature)
}
