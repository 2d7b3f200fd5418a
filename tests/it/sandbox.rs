//! The sandbox every terraform / tofu / terragrunt process runs in, tried as an
//! attacker with push access would: real terraform (and stand-in scripts where a
//! tool is missing), the real Linux Landlock, a data directory laid out like the
//! server's. Each read of something cascade holds fails that unit with the class
//! of what was refused, and nothing of it reaches the log or the error; a
//! committed provider never runs; `init` is cascade's own decision, bounded, and
//! waits for its repository's cache without holding a slot.

use cascade::exec::sandbox::{Sandbox, SandboxConfig, SandboxMode, SandboxState, SandboxUser};
use cascade::exec::{ExecError, Executor, ProcessExecutor, UnitJob};
use cascade::unit::Tool;
use cascade::unit::UnitPath;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

use crate::support;

/// A server's data directory with a checkout of pull request 1 (whose units run),
/// another pull request's checkout, a mirror and a database, and the App's key
/// outside it.
pub(crate) struct Server {
    pub(crate) tmp: tempfile::TempDir,
}

impl Server {
    pub(crate) fn new() -> Server {
        let tmp = tempfile::tempdir().unwrap();
        let s = Server { tmp };
        for dir in ["live/app", "modules/service"] {
            std::fs::create_dir_all(s.checkout().join(dir)).unwrap();
        }
        std::fs::write(s.checkout().join("shared.txt"), "readable-shared-file").unwrap();
        let other = s
            .data()
            .join("workspaces/checkouts/acme/infra/pr-2/live/app");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("terraform.tfstate"), "OTHER-PR-STATE-7f3a").unwrap();
        let mirror = s.data().join("workspaces/mirrors/acme/infra.git");
        std::fs::create_dir_all(&mirror).unwrap();
        std::fs::write(mirror.join("config"), "MIRROR-CONFIG-9b1c").unwrap();
        std::fs::write(s.data().join("cascade.db"), "SQLITE-ROWS-c0ffee").unwrap();
        std::fs::create_dir_all(s.tmp.path().join("keys")).unwrap();
        std::fs::write(s.key(), "-----BEGIN RSA PRIVATE KEY-----\nAPP-KEY-d00d\n").unwrap();
        s
    }

    pub(crate) fn data(&self) -> PathBuf {
        self.tmp.path().join("data")
    }

    pub(crate) fn checkout(&self) -> PathBuf {
        self.data().join("workspaces/checkouts/acme/infra/pr-1")
    }

    pub(crate) fn key(&self) -> PathBuf {
        self.tmp.path().join("keys/app.pem")
    }

    /// The server's sandbox, which must be enforced here: a kernel without
    /// Landlock is a failure, never a skip.
    pub(crate) fn sandbox(&self) -> Sandbox {
        let config = SandboxConfig {
            secrets: vec![(self.key(), "the GitHub App's private key")],
            ..SandboxConfig::default()
        };
        let sandbox = config
            .build(SandboxUser::Server)
            .unwrap()
            .with_data_dir(&self.data());
        assert!(
            matches!(sandbox.state(), SandboxState::Enforced { .. }),
            "this machine must have Landlock: {}",
            sandbox.describe()
        );
        sandbox
    }

    pub(crate) fn executor(&self) -> ProcessExecutor {
        let parent = [
            ("PATH", std::env::var("PATH").unwrap()),
            ("CHECKPOINT_DISABLE", "1".into()),
            ("TF_IN_AUTOMATION", "1".into()),
        ];
        ProcessExecutor::new(self.data().join("exec"))
            .with_environment(parent.map(|(k, v)| (k.into(), v.into())), &[])
            .with_sandbox(self.sandbox())
    }

    pub(crate) fn job(&self, unit: &str) -> UnitJob {
        let stem = unit.replace('/', "--");
        let run = self.data().join("runs/r1");
        UnitJob {
            unit: UnitPath::new(unit),
            dir: self.checkout().join(unit),
            root: self.checkout(),
            repo: "acme/infra".into(),
            sources: vec![],
            tool: Tool::Terraform,
            plan_file: run.join(format!("plans/{stem}.tfplan")),
            log: run.join(format!("001_{stem}.log")),
            work: run.join(format!("work/{stem}")),
            destroy: false,
            init_args: vec![],
            timeout: Duration::from_secs(120),
            init_timeout: Duration::from_secs(120),
            phase: cascade::exec::Phase::Plan,
            workflow: None,
            plan_targets: Vec::new(),
            state_change: None,
        }
    }

    /// A unit whose one resource's input is `expr`.
    pub(crate) fn unit_reading(&self, unit: &str, expr: &str) -> UnitJob {
        let job = self.job(unit);
        std::fs::create_dir_all(&job.dir).unwrap();
        std::fs::write(
            job.dir.join("main.tf"),
            format!(
                "terraform {{\n  backend \"local\" {{}}\n}}\n\nresource \"terraform_data\" \"leak\" {{\n  input = {expr}\n}}\n"
            ),
        )
        .unwrap();
        job
    }
}

fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[tokio::test]
async fn each_thing_cascade_holds_is_refused_by_its_class_and_nothing_of_it_is_read() {
    let s = Server::new();
    let exec = s.executor();
    let data = s.data();
    let pid = std::process::id();
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let cases = [
        (
            format!("filebase64(\"/proc/{pid}/environ\")"),
            "another process's files (/proc)",
            environ.clone(),
        ),
        (
            format!("file(\"/proc/{pid}/cmdline\")"),
            "another process's files (/proc)",
            std::fs::read(format!("/proc/{pid}/cmdline")).unwrap(),
        ),
        (
            format!("filebase64(\"{}\")", s.key().display()),
            "the GitHub App's private key",
            b"APP-KEY-d00d".to_vec(),
        ),
        (
            format!("filebase64(\"{}/cascade.db\")", data.display()),
            "cascade's database",
            b"SQLITE-ROWS-c0ffee".to_vec(),
        ),
        (
            // Through the checkout's own path, as `path.cwd/../..` would.
            "file(\"${path.cwd}/../../../pr-2/live/app/terraform.tfstate\")".to_string(),
            "another pull request's checkout",
            b"OTHER-PR-STATE-7f3a".to_vec(),
        ),
        (
            format!(
                "file(\"{}/workspaces/mirrors/acme/infra.git/config\")",
                data.display()
            ),
            "the repositories' mirrors",
            b"MIRROR-CONFIG-9b1c".to_vec(),
        ),
        (
            "file(\"/etc/shadow\")".to_string(),
            "a path outside the checkout",
            Vec::new(),
        ),
    ];
    for (expr, class, secret) in cases {
        let job = s.unit_reading("live/app", &expr);
        let err = exec
            .plan(&job, &CancellationToken::new())
            .await
            .expect_err(&expr);
        let ExecError::SandboxRefused { verb, what, .. } = &err else {
            panic!("{expr}: not a sandbox refusal: {err}");
        };
        assert_eq!((*verb, what.as_str()), ("reading", class), "{expr}");
        let text = err.to_string();
        assert!(
            text.contains(&format!("the sandbox refused reading {class}")),
            "{text}"
        );
        assert!(!text.contains(&*data.to_string_lossy()), "{text}");
        let log = std::fs::read_to_string(&job.log).unwrap();
        if !secret.is_empty() {
            let plain = String::from_utf8_lossy(&secret[..secret.len().min(24)]).into_owned();
            let encoded = base64(&secret);
            for shown in [err.to_string(), log.clone()] {
                assert!(
                    !shown.contains(&plain),
                    "{expr}: the content got out: {shown}"
                );
                assert!(!shown.contains(&encoded[..16.min(encoded.len())]), "{expr}");
            }
        }
    }
    // What the unit may read, it reads: its own checkout.
    let job = s.unit_reading("live/app", "file(\"${path.module}/../../shared.txt\")");
    let json = exec.plan(&job, &CancellationToken::new()).await.unwrap();
    assert!(String::from_utf8_lossy(json.bytes()).contains("readable-shared-file"));
}

/// The operator's per-unit variables that name files (`--unit-env-file`) open those files
/// to the commands that get them, and to no other: a plan's commands read the plan's token
/// and not the apply's.
#[tokio::test]
async fn a_units_credential_files_are_readable_by_its_own_phase_only() {
    let s = Server::new();
    let tokens = s.tmp.path().join("tokens");
    std::fs::create_dir_all(&tokens).unwrap();
    std::fs::write(tokens.join("plan"), "PLAN-TOKEN-5e1f").unwrap();
    std::fs::write(tokens.join("apply"), "APPLY-TOKEN-7a2b").unwrap();
    let file = format!(
        "- units: live/**\n  plan: {{AWS_WEB_IDENTITY_TOKEN_FILE: {0}/plan}}\n  apply: {{AWS_WEB_IDENTITY_TOKEN_FILE: {0}/apply}}\n",
        tokens.display()
    );
    let unit_env = cascade::exec::UnitEnv::parse(&file, Path::new("/")).unwrap();
    let exec = s.executor().with_unit_env(std::sync::Arc::new(unit_env));
    let read = |phase: &str| format!("file(\"{}/{phase}\")", tokens.display());
    let plan = |mut job: UnitJob, phase| {
        job.phase = phase;
        let exec = &exec;
        async move { exec.plan(&job, &CancellationToken::new()).await }
    };
    use cascade::exec::Phase::{Apply, Plan};

    let json = plan(s.unit_reading("live/app", &read("plan")), Plan)
        .await
        .unwrap();
    assert!(String::from_utf8_lossy(json.bytes()).contains("PLAN-TOKEN-5e1f"));
    let json = plan(s.unit_reading("live/app", &read("apply")), Apply)
        .await
        .unwrap();
    assert!(String::from_utf8_lossy(json.bytes()).contains("APPLY-TOKEN-7a2b"));
    // A plan cannot read the apply's token, nor a unit no entry matches the plan's.
    for (unit, token, phase) in [("live/app", "apply", Plan), ("other/app", "plan", Plan)] {
        let err = plan(s.unit_reading(unit, &read(token)), phase)
            .await
            .expect_err(unit);
        assert!(
            matches!(err, ExecError::SandboxRefused { .. }),
            "{unit} reading the {token} token: {err}"
        );
    }
}

#[tokio::test]
async fn a_data_directory_inside_the_repository_stays_out_of_reach() {
    // `cascade plan`'s default: <repo>/.cascade, inside the tree terraform may read.
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let data = repo.join(".cascade");
    std::fs::create_dir_all(repo.join("live/app")).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("cascade.db"), "LOCAL-DB-ROWS").unwrap();
    std::fs::write(repo.join("root.hcl"), "readable-root").unwrap();
    let sandbox = SandboxConfig::default()
        .build(SandboxUser::Cli)
        .unwrap()
        .with_data_dir(&data);
    assert!(matches!(sandbox.state(), SandboxState::Enforced { .. }));
    let exec = ProcessExecutor::new(data.join("exec")).with_sandbox(sandbox);
    let unit = repo.join("live/app");
    let job = |expr: &str| {
        std::fs::write(
            unit.join("main.tf"),
            format!("resource \"terraform_data\" \"x\" {{\n  input = {expr}\n}}\n"),
        )
        .unwrap();
        UnitJob {
            unit: UnitPath::new("live/app"),
            dir: unit.clone(),
            root: repo.clone(),
            repo: repo.display().to_string(),
            sources: vec![],
            tool: Tool::Terraform,
            plan_file: data.join("runs/r/plans/app.tfplan"),
            log: data.join("runs/r/app.log"),
            work: data.join("runs/r/work/app"),
            destroy: false,
            init_args: vec![],
            timeout: Duration::from_secs(120),
            init_timeout: Duration::from_secs(120),
            phase: cascade::exec::Phase::Plan,
            workflow: None,
            plan_targets: Vec::new(),
            state_change: None,
        }
    };
    let inside = job("file(\"${path.module}/../../.cascade/cascade.db\")");
    let err = exec
        .plan(&inside, &CancellationToken::new())
        .await
        .unwrap_err();
    let log = std::fs::read_to_string(&inside.log).unwrap();
    assert!(
        err.to_string()
            .contains("the sandbox refused reading cascade's database"),
        "{err}: {log}"
    );
    assert!(!log.contains("LOCAL-DB-ROWS"), "{log}");
    let readable = job("file(\"${path.module}/../../root.hcl\")");
    let json = match exec.plan(&readable, &CancellationToken::new()).await {
        Ok(json) => json,
        Err(e) => panic!("{e}: {}", std::fs::read_to_string(&readable.log).unwrap()),
    };
    assert!(String::from_utf8_lossy(json.bytes()).contains("readable-root"));
}

/// A stand-in provider committed under `dir`'s local mirror (`terraform.d`):
/// running it touches `marker`.
fn committed_provider(dir: &Path, marker: &Path) {
    std::fs::write(
        dir.join("main.tf"),
        "terraform {\n  required_providers {\n    evil = { source = \"example.com/acme/evil\", version = \"1.0.0\" }\n  }\n}\n\nprovider \"evil\" {}\n",
    )
    .unwrap();
    let plugin = dir.join("terraform.d/plugins/example.com/acme/evil/1.0.0/linux_amd64");
    std::fs::create_dir_all(&plugin).unwrap();
    let binary = plugin.join("terraform-provider-evil_v1.0.0");
    std::fs::write(
        &binary,
        format!("#!/bin/sh\ntouch {}\nexit 1\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn terraform_in(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("terraform")
        .args(args)
        .current_dir(dir)
        .env("CHECKPOINT_DISABLE", "1")
        .env("TF_IN_AUTOMATION", "1")
        .output()
        .unwrap();
    let _ = out; // Its exit status does not matter: whether the provider ran does.
}

#[tokio::test]
async fn a_provider_committed_in_terraform_d_is_refused_and_never_runs() {
    let s = Server::new();
    let marker = s.tmp.path().join("provider-ran");
    // The attack is real: plain terraform installs and runs it.
    let control = s.tmp.path().join("control");
    std::fs::create_dir_all(&control).unwrap();
    committed_provider(&control, &marker);
    terraform_in(&control, &["init", "-input=false"]);
    terraform_in(&control, &["plan", "-input=false"]);
    assert!(marker.exists(), "plain terraform runs a committed provider");
    std::fs::remove_file(&marker).unwrap();

    let exec = s.executor();
    // In the unit itself, and in a module directory it uses (terragrunt copies it
    // into the directory terraform runs in).
    let job = s.job("live/app");
    committed_provider(&job.dir, &marker);
    let err = exec
        .plan(&job, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ExecError::Refused { reason } if reason.contains("`live/app/terraform.d` is a provider directory")),
        "{err}"
    );
    let mut job = s.job("live/db");
    std::fs::create_dir_all(&job.dir).unwrap();
    std::fs::write(
        job.dir.join("main.tf"),
        "module \"m\" {\n  source = \"../../modules/service\"\n}\n",
    )
    .unwrap();
    committed_provider(&s.checkout().join("modules/service"), &marker);
    job.sources = vec![s.checkout().join("modules/service")];
    let err = exec
        .plan(&job, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("`modules/service/terraform.d`"),
        "{err}"
    );
    assert!(!marker.exists(), "nothing ran");
    assert!(
        !job.log.exists(),
        "not even init: {:?}",
        std::fs::read_to_string(&job.log)
    );
}

#[tokio::test]
async fn a_committed_dot_terraform_is_refused_and_never_runs() {
    let s = Server::new();
    let marker = s.tmp.path().join("provider-ran");
    // An initialised unit with its provider inside `.terraform/`, committed.
    let unit = s.checkout().join("live/app");
    committed_provider(&unit, &marker);
    terraform_in(&unit, &["init", "-input=false"]);
    let installed = unit.join(".terraform/providers/example.com/acme/evil/1.0.0/linux_amd64");
    let linked = std::fs::read_link(&installed).unwrap();
    std::fs::remove_file(&installed).unwrap();
    support::copy_dir(&unit.join(&linked), &installed);
    std::fs::remove_dir_all(unit.join("terraform.d")).unwrap();
    let checkout = s.checkout();
    support::git(&checkout, &["init", "-q"]);
    support::git(&checkout, &["add", "-f", "-A"]);
    support::git(&checkout, &["commit", "-qm", "with .terraform"]);
    // The attack is real: plain terraform plans with what is committed, no init.
    terraform_in(&unit, &["plan", "-input=false"]);
    assert!(
        marker.exists(),
        "plain terraform runs a committed .terraform"
    );
    std::fs::remove_file(&marker).unwrap();

    let job = s.job("live/app");
    let err = s
        .executor()
        .plan(&job, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ExecError::Refused { reason } if reason.contains("`live/app/.terraform` is committed")),
        "{err}"
    );
    assert!(!marker.exists(), "nothing ran");
}

/// A stand-in tool: `body` is its script.
fn stand_in(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[tokio::test]
async fn terragrunt_runs_in_the_same_box_and_cannot_signal_cascade() {
    // terragrunt's run_cmd, hooks and generate run the pull request's commands:
    // a stand-in terragrunt does what they could.
    let s = Server::new();
    let tools = tempfile::tempdir().unwrap();
    let terragrunt = stand_in(
        tools.path(),
        "terragrunt",
        &format!(
            "kill -0 {pid} 2>/dev/null && touch signalled\n\
             env > env.seen\n\
             touch \"$TF_PLUGIN_CACHE_DIR/poisoned\" 2>/dev/null && touch cache-written\n\
             cat {db}",
            pid = std::process::id(),
            db = s.data().join("cascade.db").display(),
        ),
    );
    let exec = s
        .executor()
        .with_binary(Tool::Terragrunt, terragrunt.display().to_string());
    let mut job = s.job("live/app");
    job.tool = Tool::Terragrunt;
    let err = exec
        .plan(&job, &CancellationToken::new())
        .await
        .unwrap_err();
    // `init` may write the cache, the plan may not; the init step ran first and
    // its `cat` was refused already.
    assert!(
        err.to_string()
            .contains("`terragrunt init` failed: the sandbox refused reaching cascade's database"),
        "{err}"
    );
    assert!(!job.dir.join("signalled").exists(), "a signal left the box");
    let env = std::fs::read_to_string(job.dir.join("env.seen")).unwrap();
    let home = env.lines().find_map(|l| l.strip_prefix("HOME=")).unwrap();
    assert!(
        home.starts_with(&*s.data().join("exec/tmp").to_string_lossy()),
        "a private home: {home}"
    );
    assert!(!env.contains("CASCADE_"), "{env}");
}

#[tokio::test]
async fn the_provider_cache_is_written_only_by_init() {
    let s = Server::new();
    let tools = tempfile::tempdir().unwrap();
    let terraform = stand_in(
        tools.path(),
        "terraform",
        "case \"$1\" in\n\
         init) mkdir -p .terraform; touch \"$TF_PLUGIN_CACHE_DIR/by-init\" || exit 1;;\n\
         plan) touch \"$TF_PLUGIN_CACHE_DIR/by-plan\" || exit 1;;\n\
         esac",
    );
    let exec = s
        .executor()
        .with_binary(Tool::Terraform, terraform.display().to_string());
    let job = s.job("live/app");
    let err = exec
        .plan(&job, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("`terraform plan` failed: the sandbox refused"),
        "{err}"
    );
    let caches: Vec<PathBuf> = std::fs::read_dir(s.data().join("exec/plugin-cache"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(caches.len(), 1, "one cache for the repository");
    assert!(caches[0].join("by-init").exists());
    assert!(!caches[0].join("by-plan").exists());
}

#[tokio::test]
async fn a_unit_directory_that_leads_out_of_its_checkout_runs_nothing() {
    let s = Server::new();
    let tools = tempfile::tempdir().unwrap();
    let ran = tools.path().join("ran");
    let terraform = stand_in(
        tools.path(),
        "terraform",
        &format!("touch {}", ran.display()),
    );
    let exec = s
        .executor()
        .with_binary(Tool::Terraform, terraform.display().to_string());
    std::os::unix::fs::symlink("../../pr-2/live", s.checkout().join("escape")).unwrap();
    let job = s.job("escape/app");
    let err = exec
        .plan(&job, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("the directory of `escape/app` resolves outside its checkout"),
        "{err}"
    );
    assert!(!ran.exists());
}

#[tokio::test]
async fn without_landlock_the_server_runs_nothing_and_the_cli_warns_and_goes_on() {
    // The test hook stands in for a kernel without Landlock.
    let refusing = Sandbox::new(SandboxMode::Auto, SandboxUser::Server, Some(0)).unwrap();
    assert!(
        matches!(refusing.state(), SandboxState::Refusing { why } if why.contains("no Landlock")),
        "{:?}",
        refusing.state()
    );
    assert!(
        refusing
            .describe()
            .contains("pull requests are not planned")
    );
    let cli = Sandbox::new(SandboxMode::Auto, SandboxUser::Cli, Some(0)).unwrap();
    assert!(matches!(cli.state(), SandboxState::Unconfined { .. }));
    let err = Sandbox::new(SandboxMode::Landlock, SandboxUser::Server, Some(0)).unwrap_err();
    assert!(err.to_string().contains("--sandbox landlock"), "{err}");
    let off = Sandbox::new(SandboxMode::Off, SandboxUser::Server, None).unwrap();
    assert!(matches!(off.state(), SandboxState::Unconfined { why } if why == "--sandbox off"));

    let s = Server::new();
    let tools = tempfile::tempdir().unwrap();
    let ran = tools.path().join("ran");
    let terraform = stand_in(
        tools.path(),
        "terraform",
        &format!("touch {}", ran.display()),
    );
    let exec = ProcessExecutor::new(s.data().join("exec"))
        .with_sandbox(refusing)
        .with_binary(Tool::Terraform, terraform.display().to_string());
    let job = s.job("live/app");
    let err = exec
        .plan(&job, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, ExecError::NoSandbox { .. }), "{err}");
    let err = exec
        .apply(&job, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, ExecError::NoSandbox { .. }), "{err}");
    assert!(!ran.exists(), "nothing ran");
}
