//! The command line: `cascade graph`, `affected`, `plan`, `apply`, `drift`,
//! `serve`, `schema` and `policy test`. `cascade graph` and `cascade affected`: each command
//! loads the repo configuration, discovers the graph and prints it for people
//! (text) or for programs (JSON, DOT, mermaid). Exit codes: 0 when there is
//! nothing wrong, 1 when the graph has problems (output is still printed),
//! 2 when cascade could not run at all.

mod affected_cmd;
mod drift_cmd;
mod graph_cmd;
mod no_units;
mod policies;
mod policy_cmd;
mod progress;
mod render;
mod repo;
mod run_cmd;
mod serve_cmd;
mod serve_secrets;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "cascade",
    version,
    about = "GitOps pull-request bot for Terragrunt / OpenTofu / Terraform monorepos"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Discover every unit and print the dependency graph: units, edges, what each reads, waves.
    Graph(GraphArgs),
    /// Print the units a change affects: those that read a changed file, and everything depending on them.
    Affected(AffectedArgs),
    /// Plan the affected units in dependency order and print the comment the bot would post.
    Plan(PlanArgs),
    /// Apply a plan by its id, exactly as reviewed: each unit is re-planned and applied only if unchanged.
    Apply(ApplyArgs),
    /// Plan every unit of the checked-out tree (or those --units picks) and report the
    /// ones whose real infrastructure no longer matches: a plan that is not empty. Never
    /// applies. Exit status: 0 nothing drifted, 2 something drifted, 1 a unit failed to
    /// plan or cascade could not run (failure wins over drift).
    Drift(DriftArgs),
    /// Run the bot for a GitHub App and/or a GitLab instance: receive webhooks, plan pull
    /// requests, apply on `/apply <id>`.
    Serve(Box<serve_cmd::ServeArgs>),
    /// Print the JSON schema of `.cascade.yaml`, for editors.
    Schema(SchemaArgs),
    /// Work with Rego policies without the bot.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// One policy evaluation, asked on standard input by cascade itself (see
    /// `exec::policy_worker`): not for people.
    #[command(name = "policy-worker", hide = true)]
    PolicyWorker,
}

#[derive(Subcommand, Debug)]
enum PolicyCommand {
    /// Run the `test_*` rules of a policy directory's `*_test.rego` files (as `opa test`
    /// does): `ok` or `FAIL` per test, then a summary. Exit status: 0 when every test
    /// passed, 1 when one failed or there was none, 2 when the policies could not be read
    /// or compiled.
    Test(PolicyTestArgs),
}

#[derive(clap::Args, Debug)]
struct SchemaArgs {
    /// Print instead the JSON schema of the document a policy sees for one unit
    /// (`input` in Rego).
    #[arg(long)]
    policy_input: bool,
}

#[derive(clap::Args, Debug)]
struct PolicyTestArgs {
    /// The repository's directory (default: the top level of the git repository around
    /// the current directory, as git finds it).
    #[arg(long, env = "CASCADE_REPO")]
    repo: Option<PathBuf>,
    /// The policy directory, relative to the repository.
    #[arg(long, value_name = "PATH", default_value = "policies")]
    dir: String,
}

#[derive(clap::Args, Debug)]
// One of the two ways to say what changed is required; clap's error names both.
#[command(group(clap::ArgGroup::new("what_changed").required(true).args(["changed", "base"])))]
struct PlanArgs {
    /// The repository's directory (default: the top level of the git repository around
    /// the current directory, as git finds it); its `.cascade.yaml` applies.
    #[arg(long, env = "CASCADE_REPO")]
    repo: Option<PathBuf>,
    /// Changed files, relative to --repo when given, else to the current directory
    /// (compared with the checked-out commit).
    #[arg(long, num_args = 1.., conflicts_with_all = ["base", "head"])]
    changed: Vec<String>,
    /// Compare against this revision (merge-base diff, as a pull request shows it).
    #[arg(long)]
    base: Option<String>,
    /// The revision holding the change; it must be the one checked out.
    #[arg(long, default_value = "HEAD", requires = "base")]
    head: String,
    #[command(flatten)]
    run: RunOptions,
}

/// The options of every command that runs terraform.
#[derive(clap::Args, Debug)]
struct RunOptions {
    /// How many units run at once.
    #[arg(long, default_value_t = 4, env = "CASCADE_PARALLELISM")]
    parallelism: usize,
    /// The longest one terraform command may run, in seconds.
    #[arg(long, default_value_t = 1800)]
    timeout: u64,
    #[arg(long, value_enum, default_value_t = RunFormat::Markdown)]
    format: RunFormat,
    /// Where plans, runs and logs are kept (default: <repo>/.cascade); `cascade drift`
    /// keeps only the logs of its last run there, in drift/logs.
    #[arg(long, env = "CASCADE_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// The longest one `init` may run, in seconds (module and provider downloads).
    #[arg(long, default_value_t = 300, env = "CASCADE_INIT_TIMEOUT",
          value_parser = clap::value_parser!(u64).range(1..))]
    init_timeout: u64,
    #[command(flatten)]
    pass: PassEnv,
    #[command(flatten)]
    unit_env: UnitEnvArgs,
    #[command(flatten)]
    sandbox: SandboxArgs,
    #[command(flatten)]
    plan_limits: PlanLimitArgs,
}

/// `--max-plan-json` and `--plan-memory`, shared by the commands that plan.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct PlanLimitArgs {
    /// The largest plan JSON (`terraform show -json`) one unit may produce, in MiB;
    /// a larger one fails that unit, and its `show` is stopped.
    #[arg(long, value_name = "MIB", env = "CASCADE_MAX_PLAN_JSON",
          default_value_t = crate::exec::DEFAULT_MAX_PLAN_JSON_MIB,
          value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub max_plan_json: u64,
    /// The memory every plan being read or parsed at once may take together, in MiB;
    /// plans wait for their share, and one that alone needs more fails.
    #[arg(long, value_name = "MIB", env = "CASCADE_PLAN_MEMORY",
          default_value_t = crate::exec::DEFAULT_PLAN_MEMORY_MIB,
          value_parser = clap::value_parser!(u64).range(1..=1048576))]
    pub plan_memory: u64,
}

impl PlanLimitArgs {
    /// The limits these flags give, refused when no plan of the largest size could fit.
    pub fn limits(&self) -> anyhow::Result<crate::exec::PlanLimits> {
        let limits = crate::exec::PlanLimits {
            max_json_mib: self.max_plan_json,
            memory_mib: self.plan_memory,
        };
        limits.check().map_err(anyhow::Error::msg)?;
        Ok(limits)
    }
}

/// `--sandbox` and what goes with it, shared by the commands that run terraform.
#[derive(clap::Args, Debug, Default)]
pub struct SandboxArgs {
    /// How terraform, tofu and terragrunt are confined: `auto` uses Landlock when the
    /// kernel has it (without it the server plans nothing and the CLI warns), `landlock`
    /// refuses to start without it, `off` runs them with cascade's own access.
    #[arg(long = "sandbox", value_enum, env = "CASCADE_SANDBOX", default_value_t)]
    pub mode: crate::exec::sandbox::SandboxMode,
    /// Also let terraform read this file or directory (repeatable, or comma-separated
    /// in the environment): a credentials file, a CLI configuration, a tool's directory.
    #[arg(
        long = "sandbox-read",
        value_name = "PATH",
        env = "CASCADE_SANDBOX_READ",
        value_delimiter = ','
    )]
    pub read: Vec<PathBuf>,
    /// Test hook: behave as if the kernel's Landlock ABI were N (0: no Landlock).
    #[arg(
        long = "sandbox-assume-abi",
        hide = true,
        env = "CASCADE_SANDBOX_ASSUME_ABI"
    )]
    pub assume_abi: Option<i32>,
}

impl SandboxArgs {
    /// The sandbox configuration these flags give.
    pub fn config(&self) -> crate::exec::sandbox::SandboxConfig {
        crate::exec::sandbox::SandboxConfig {
            mode: self.mode,
            read: self.read.clone(),
            assume_abi: self.assume_abi,
            secrets: Vec::new(),
        }
    }
}

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Exit status: 0 when nothing drifted, 2 when some unit drifted, 1 when a \
unit failed to plan (or was skipped because a unit it depends on failed) or cascade could not \
run. A failure wins over drift: 1 even when other units drifted."
)]
struct DriftArgs {
    /// The repository's directory (default: the top level of the git repository around
    /// the current directory, as git finds it); its `.cascade.yaml` applies.
    #[arg(long, env = "CASCADE_REPO")]
    repo: Option<PathBuf>,
    /// Check only the units whose path (or a directory above it) matches this glob
    /// (repeatable; `*` stays within a directory, `**` crosses directories).
    #[arg(long = "units", value_name = "GLOB")]
    units: Vec<String>,
    #[command(flatten)]
    run: RunOptions,
}

#[derive(clap::Args, Debug)]
struct ApplyArgs {
    /// The repository's directory (default: the top level of the git repository around
    /// the current directory, as git finds it); its `.cascade.yaml` applies.
    #[arg(long, env = "CASCADE_REPO")]
    repo: Option<PathBuf>,
    /// The plan id, as in `/apply <id>`.
    id: String,
    #[command(flatten)]
    run: RunOptions,
}

/// `--pass-env`, shared by the commands that run terraform.
#[derive(clap::Args, Debug, Default)]
pub struct PassEnv {
    /// Also pass this environment variable to terraform/tofu/terragrunt (repeatable,
    /// or comma-separated in the environment; see README for what they get anyway).
    /// `CASCADE_*` variables are never passed.
    #[arg(
        long = "pass-env",
        value_name = "NAME",
        env = "CASCADE_PASS_ENV",
        value_delimiter = ','
    )]
    pub names: Vec<String>,
}

/// `--unit-env-file`, shared by the commands that run terraform.
#[derive(clap::Args, Debug, Default)]
pub struct UnitEnvArgs {
    /// The operator's per-unit credentials (YAML; see README, "Per-unit credentials"):
    /// repository and unit globs to variables for plans and for applies. Read once, at
    /// start; a problem in it stops the start, naming where it is.
    #[arg(
        long = "unit-env-file",
        value_name = "PATH",
        env = "CASCADE_UNIT_ENV_FILE"
    )]
    pub file: Option<PathBuf>,
}

impl UnitEnvArgs {
    /// The file's entries (none without the flag), their values registered with the redactor.
    pub fn load(&self) -> anyhow::Result<std::sync::Arc<crate::exec::UnitEnv>> {
        Ok(std::sync::Arc::new(match &self.file {
            Some(file) => crate::exec::UnitEnv::load(file)?,
            None => crate::exec::UnitEnv::default(),
        }))
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum RunFormat {
    Markdown,
    Json,
}

#[derive(clap::Args, Debug)]
struct GraphArgs {
    /// The repository (or the directory inside it) to discover; paths are printed relative
    /// to it (default: the top level of the git repository around the current directory).
    #[arg(long, env = "CASCADE_REPO")]
    repo: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = GraphFormat::Text)]
    format: GraphFormat,
    /// DOT: keep every edge instead of the transitive reduction.
    #[arg(long)]
    full: bool,
    /// Override a `feature` flag's default, as Terragrunt's --feature does (repeatable).
    #[arg(long = "feature", value_name = "NAME=VALUE", value_parser = parse_feature)]
    features: Vec<(String, String)>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum GraphFormat {
    Text,
    Json,
    Dot,
    Mermaid,
}

#[derive(clap::Args, Debug)]
// One of the two ways to say what changed is required; clap's error names both.
#[command(group(clap::ArgGroup::new("what_changed").required(true).args(["changed", "base"])))]
struct AffectedArgs {
    /// The repository's directory (default: the top level of the git repository around
    /// the current directory, as git finds it); its `.cascade.yaml` applies.
    #[arg(long, env = "CASCADE_REPO")]
    repo: Option<PathBuf>,
    /// Changed files, relative to --repo when given, else to the current directory.
    #[arg(long, num_args = 1.., conflicts_with_all = ["base", "head"])]
    changed: Vec<String>,
    /// Compare against this revision (merge-base diff, as a pull request shows it).
    #[arg(long)]
    base: Option<String>,
    /// The revision holding the change.
    #[arg(long, default_value = "HEAD", requires = "base")]
    head: String,
    #[arg(long, value_enum, default_value_t = TextOrJson::Text)]
    format: TextOrJson,
    /// Override a `feature` flag's default, as Terragrunt's --feature does (repeatable).
    #[arg(long = "feature", value_name = "NAME=VALUE", value_parser = parse_feature)]
    features: Vec<(String, String)>,
}

impl Command {
    /// `--repo` and `--data-dir` of the commands that run terraform, made absolute
    /// against the current directory (without resolving symlinks).
    fn make_paths_absolute(&mut self) -> std::io::Result<()> {
        let absolute = |p: &mut PathBuf| -> std::io::Result<()> {
            *p = std::path::absolute(&*p)?;
            Ok(())
        };
        match self {
            Command::Plan(PlanArgs { repo, run, .. })
            | Command::Apply(ApplyArgs { repo, run, .. })
            | Command::Drift(DriftArgs { repo, run, .. }) => {
                repo.as_mut().map(absolute).transpose()?;
                run.data_dir.as_mut().map(absolute).transpose()?;
            }
            Command::Serve(args) => args.make_paths_absolute()?,
            Command::Graph(_)
            | Command::Affected(_)
            | Command::Schema(_)
            | Command::Policy(_)
            | Command::PolicyWorker => {}
        }
        Ok(())
    }
}

fn parse_feature(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .ok_or_else(|| format!("`{text}` is not NAME=VALUE"))
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum TextOrJson {
    Text,
    Json,
}

/// The configuration `cascade serve ARGS…` would start the server with (the
/// flags, their `CASCADE_*` environment twins, the files they name, each
/// forge all or none), without starting it.
pub fn serve_config<I, T>(args: I) -> anyhow::Result<crate::server::ServeConfig>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let argv = ["cascade", "serve"]
        .into_iter()
        .map(std::ffi::OsString::from)
        .chain(args.into_iter().map(Into::into));
    match parse(argv)?.command {
        Command::Serve(args) => args.into_config(),
        _ => unreachable!("the arguments start with `serve`"),
    }
}

/// The command line `argv` (program name first), noting which of `serve`'s
/// secrets it gave as flags: only the matches know where a value came from.
fn parse<I, T>(argv: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let matches = Cli::command().try_get_matches_from(argv)?;
    let mut cli = Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut Cli::command()))?;
    if let (Command::Serve(args), Some(("serve", serve))) = (&mut cli.command, matches.subcommand())
    {
        args.note_command_line(serve);
    }
    Ok(cli)
}

/// Runs the command line and returns the process exit code.
pub fn main() -> ExitCode {
    let mut cli = match parse(std::env::args_os()) {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            // `cascade drift` exits 2 when something drifted; a usage error must not look like drift.
            let drift = std::env::args_os().nth(1).is_some_and(|a| a == "drift");
            let code = if err.use_stderr() && drift {
                1
            } else {
                err.exit_code()
            };
            return ExitCode::from(u8::try_from(code).unwrap_or(2));
        }
    };
    match &cli.command {
        Command::Serve(args) => init_tracing(true, args.log_format() == serve_cmd::LogFormat::Json),
        _ => init_tracing(false, false),
    }
    // Once, before anything runs: terraform runs in each unit's directory, so a
    // relative path given on the command line would point somewhere else there.
    if let Err(err) = cli.command.make_paths_absolute() {
        eprintln!(
            "cascade: cannot resolve the paths given on the command line ({err}); run cascade from an existing directory"
        );
        return ExitCode::from(2);
    }
    // plan, apply, drift and serve first set a private umask and make the process
    // non-dumpable (`private_dir::protect_process`, in each of them); graph, affected,
    // schema and policy test create no file, run no terraform and hold no secret, so they
    // need neither.
    let result = match cli.command {
        Command::Graph(args) => graph_cmd::run(&args),
        Command::Affected(args) => affected_cmd::run(&args),
        Command::Plan(args) => run_cmd::plan(&args),
        Command::Apply(args) => run_cmd::apply(&args),
        Command::Drift(args) => drift_cmd::run(&args),
        Command::Serve(args) => serve_cmd::run(*args),
        Command::Policy(PolicyCommand::Test(args)) => policy_cmd::test(&args),
        Command::PolicyWorker => Ok(ExitCode::from(crate::exec::policy_worker::serve() as u8)),
        Command::Schema(args) => {
            if args.policy_input {
                println!("{}", crate::policy::input::json_schema());
            } else {
                println!("{}", crate::config::RepoConfig::json_schema());
            }
            Ok(ExitCode::SUCCESS)
        }
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("cascade: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// Logs to stderr, from `info` up for the server and `warn` up for the other commands
/// (`CASCADE_LOG` decides otherwise): JSON lines with the current span (delivery, pull
/// request, run) when `json`, text otherwise. Text has colours on a terminal only: a CI
/// log, a file or a journal gets no escape sequences.
fn init_tracing(server: bool, json: bool) {
    use std::io::IsTerminal as _;
    let default = if server { "info" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_env("CASCADE_LOG")
        .unwrap_or_else(|_| default.into());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = if json {
        builder.json().with_current_span(true).try_init()
    } else {
        builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init()
    };
}
