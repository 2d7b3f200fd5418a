//! The box every terraform, tofu and terragrunt process runs in: Linux Landlock.
//!
//! A pull request's code runs at plan time (`file()`, data sources, providers,
//! terragrunt's `run_cmd` and hooks), so each command is confined before it
//! starts. It may read and execute the system's programs and libraries and the
//! tools; read its own tree (the pull request's checkout, or a base revision's
//! tree) and its repository's provider cache; read a few system files
//! (certificates, name service, time zones) and what the operator names; and
//! write only its unit's directory, its own private working and temporary
//! directories and its saved plan file (the provider cache too, during
//! `init`). Nothing else: not the data directory, the database, the keys, the
//! mirrors, other checkouts, `/proc` (so no other process's `environ`,
//! `cmdline` or `mem`), nor `/tmp`. Landlock also keeps it from signalling or
//! tracing processes outside its box and from reaching abstract unix sockets
//! made outside it (ABI 6). The network stays open: providers need their APIs.
//!
//! Owns the sandbox's mode and state, the probe that checks Landlock really
//! refuses, and each command's ruleset. Never widens a rule to a path a
//! pull request decides without resolving it inside its tree first
//! (`sandbox::paths`), and never lets a broader rule cover cascade's own
//! private directories.

mod paths;

pub use paths::open_beneath;

use landlock::{
    ABI, Access as _, AccessFs, BitFlags, PathBeneath, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, Scope,
};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

/// The newest Landlock ABI whose rights cascade asks for (and tested): on an
/// older kernel the rights it lacks are left out (Landlock's best effort).
const ABI_WANTED: ABI = ABI::V6;

/// The system's programs and libraries: read and execute.
const PROGRAMS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// System files a tool reads: certificates, name service, time zones, the
/// dynamic linker's cache, git's and the shell's system configuration.
const SYSTEM_FILES: &[&str] = &[
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/nsswitch.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/passwd",
    "/etc/group",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/gitconfig",
    "/etc/mime.types",
];

/// Devices any tool opens for reading and writing.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Variables (passed to the tools by the environment allow-list) whose value
/// names a file or directory the tools read: credentials, CLI configuration,
/// certificates. The sandbox lets the tools read what they name.
pub const PATH_VARIABLES: &[&str] = &[
    "TF_CLI_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CA_BUNDLE",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "CLOUDSDK_CONFIG",
    "AZURE_FEDERATED_TOKEN_FILE",
    "ARM_CLIENT_CERTIFICATE_PATH",
    "ARM_OIDC_TOKEN_FILE_PATH",
    "KUBECONFIG",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// `--sandbox`: how terraform, tofu and terragrunt processes are confined.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum SandboxMode {
    /// Landlock when the kernel has it; without it the server plans nothing
    /// (the CLI warns and runs unconfined).
    #[default]
    Auto,
    /// Landlock, or refuse to start.
    Landlock,
    /// No sandbox: pull requests' code runs with cascade's own access (a
    /// warning on every plan).
    Off,
}

/// What a sandbox does with the commands it is given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SandboxState {
    /// Every command runs confined, with this kernel's Landlock ABI.
    Enforced { abi: i32 },
    /// Commands run with cascade's own access, for this reason (`--sandbox
    /// off`, or the CLI on a kernel without Landlock).
    Unconfined { why: String },
    /// No usable sandbox, and running without one was not chosen: nothing
    /// runs, for this reason.
    Refusing { why: String },
}

/// Why `--sandbox landlock` cannot be had.
#[derive(Debug, thiserror::Error)]
#[error(
    "--sandbox landlock: {why}; run cascade on Linux 5.13 or later with Landlock enabled (the `lsm=` boot parameter must list landlock), or choose --sandbox auto or --sandbox off"
)]
pub struct SandboxUnavailable {
    pub why: String,
}

/// The sandbox as the operator configured it (`--sandbox`, `--sandbox-read`).
#[derive(Clone, Debug, Default)]
pub struct SandboxConfig {
    pub mode: SandboxMode,
    /// Files and directories every command may also read.
    pub read: Vec<PathBuf>,
    /// The `--sandbox-assume-abi` test hook: the kernel's Landlock ABI as a
    /// test would have it (0: none), instead of the kernel's answer.
    pub assume_abi: Option<i32>,
    /// cascade's secrets kept outside the data directory (the App's key file,
    /// the GitLab token file): never readable, and named so in refusals.
    pub secrets: Vec<(PathBuf, &'static str)>,
}

impl SandboxConfig {
    /// The sandbox this configuration gives `user`.
    pub fn build(&self, user: SandboxUser) -> Result<Sandbox, SandboxUnavailable> {
        let mut sandbox = Sandbox::new(self.mode, user, self.assume_abi)?;
        for path in &self.read {
            sandbox = sandbox.with_read(path);
        }
        for (path, shown_as) in &self.secrets {
            sandbox = sandbox.with_private(path, shown_as);
        }
        Ok(sandbox)
    }
}

/// The sandbox of one executor: its state and the paths every command may use.
#[derive(Clone, Debug)]
pub struct Sandbox {
    state: SandboxState,
    /// Read and execute beneath.
    programs: Vec<PathBuf>,
    /// Read beneath.
    reads: Vec<PathBuf>,
    /// Read and write these devices.
    devices: Vec<PathBuf>,
    /// Cascade's own directories: no rule of a command's tree or unit covers
    /// them, even when they sit inside it (`cascade plan`'s default data
    /// directory is inside the repository).
    private: Vec<PathBuf>,
    /// What a refusal calls cascade's paths (the private ones and the parts
    /// inside them: the database, the checkouts), longest match first.
    known: Vec<(PathBuf, &'static str)>,
}

/// Who the sandbox is for: the server refuses to plan without one, the CLI
/// warns and goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SandboxUser {
    Server,
    Cli,
}

/// What one command may reach, besides what every command may.
#[derive(Clone, Debug, Default)]
pub struct Reach {
    /// Read and execute beneath: the command's tree (its checkout), the
    /// provider cache while it is read-only.
    pub read: Vec<PathBuf>,
    /// Read, execute and write beneath: the unit's directory, the command's
    /// private directories, the provider cache during `init`.
    pub write: Vec<PathBuf>,
    /// Read and write these files (the saved plan, made before the command).
    pub files: Vec<PathBuf>,
    /// Read only these files (the saved plan an apply applies).
    pub read_files: Vec<PathBuf>,
}

/// The ruleset of one command, applied in the child between `fork` and `exec`.
#[derive(Debug)]
pub struct Confined {
    fd: OwnedFd,
}

impl Confined {
    /// The ruleset's descriptor, for [`enter`] in the child.
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Confines the calling process with the ruleset `fd`: `no_new_privs` (required
/// by Landlock for an unprivileged caller, and keeping set-uid programs from
/// gaining rights), then `landlock_restrict_self`. Only system calls: it runs in
/// the child between `fork` and `exec`, where nothing may allocate or lock.
pub fn enter(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: plain system calls with integer arguments.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The kernel's Landlock ABI version, or why there is none. `assume` replaces
/// the kernel's answer (the `--sandbox-assume-abi` test hook; 0 is "none").
fn kernel_abi(assume: Option<i32>) -> Result<i32, String> {
    let version = match assume {
        Some(v) => v,
        // SAFETY: the documented version query (no attribute, size 0).
        None => unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<u8>(),
                0usize,
                1u32, // LANDLOCK_CREATE_RULESET_VERSION
            ) as i32
        },
    };
    if version >= 1 {
        return Ok(version);
    }
    let why = match assume {
        Some(_) => "the kernel has no Landlock (as --sandbox-assume-abi says)".to_string(),
        None => match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EOPNOTSUPP) => "Landlock is built into this kernel but not enabled".into(),
            _ => "this kernel has no Landlock".into(),
        },
    };
    Err(why)
}

impl Sandbox {
    /// The sandbox `mode` gives `user` on this kernel. `--sandbox landlock`
    /// without a usable Landlock is an error; `auto` without one refuses to
    /// run anything for the server and runs unconfined for the CLI. A kernel
    /// that says it has Landlock must also pass a probe: a shell confined to
    /// the system's programs is refused a file it was not given.
    pub fn new(
        mode: SandboxMode,
        user: SandboxUser,
        assume_abi: Option<i32>,
    ) -> Result<Sandbox, SandboxUnavailable> {
        let mut sandbox = Sandbox {
            state: SandboxState::Unconfined {
                why: "--sandbox off".into(),
            },
            programs: existing(PROGRAMS),
            reads: existing(SYSTEM_FILES),
            devices: existing(DEVICES),
            private: Vec::new(),
            known: Vec::new(),
        };
        if mode == SandboxMode::Off {
            return Ok(sandbox);
        }
        let usable = kernel_abi(assume_abi).and_then(|abi| sandbox.probe().map(|()| abi));
        sandbox.state = match (usable, mode, user) {
            (Ok(abi), _, _) => SandboxState::Enforced { abi },
            (Err(why), SandboxMode::Landlock, _) => return Err(SandboxUnavailable { why }),
            (Err(why), _, SandboxUser::Server) => SandboxState::Refusing { why },
            (Err(why), _, SandboxUser::Cli) => SandboxState::Unconfined { why },
        };
        Ok(sandbox)
    }

    /// A sandbox in `state` as it is (tests; executors built without a mode).
    pub fn with_state(mut self, state: SandboxState) -> Sandbox {
        self.state = state;
        self
    }

    pub fn state(&self) -> &SandboxState {
        &self.state
    }

    /// One line for logs and `/healthz`.
    pub fn describe(&self) -> String {
        match &self.state {
            SandboxState::Enforced { abi } => format!("landlock (ABI {abi})"),
            SandboxState::Unconfined { why } => format!("off ({why})"),
            SandboxState::Refusing { why } => {
                format!("unavailable ({why}): pull requests are not planned")
            }
        }
    }

    /// Every command may also read (and execute) beneath `path`: a tool's
    /// binary, a directory the operator names with `--sandbox-read`, a
    /// credentials file a variable names.
    pub fn with_read(mut self, path: &Path) -> Sandbox {
        if let Ok(real) = std::fs::canonicalize(path)
            && !self.programs.contains(&real)
        {
            self.programs.push(real);
        }
        self
    }

    /// `path` is cascade's own (the data directory, a key): no rule of a
    /// command's tree or unit covers it, and a refusal calls it `shown_as`.
    pub fn with_private(mut self, path: &Path, shown_as: &'static str) -> Sandbox {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let real = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if !self.private.contains(&real) {
            self.private.push(real.clone());
        }
        self.with_name(&path, shown_as).with_name(&real, shown_as)
    }

    /// cascade's data directory `data` is private, and refusals name its parts.
    pub fn with_data_dir(self, data: &Path) -> Sandbox {
        let data = std::path::absolute(data).unwrap_or_else(|_| data.to_path_buf());
        let mut sandbox = self.with_private(&data, "cascade's data directory");
        for (part, shown_as) in [
            ("cascade.db", "cascade's database"),
            ("github-app", "the GitHub App's private key"),
            ("workspaces/checkouts", "another pull request's checkout"),
            ("workspaces/mirrors", "the repositories' mirrors"),
            ("workspaces/trees", "another revision's tree"),
            ("trees", "another revision's tree"),
            ("runs", "another unit's run files"),
            ("exec/plugin-cache", "another repository's provider cache"),
        ] {
            sandbox = sandbox.with_name(&data.join(part), shown_as);
            if let Ok(real) = std::fs::canonicalize(&data) {
                sandbox = sandbox.with_name(&real.join(part), shown_as);
            }
        }
        sandbox
    }

    /// A refusal of something beneath `path` calls it `shown_as` (a part of a
    /// private directory: the database, the checkouts).
    pub fn with_name(mut self, path: &Path, shown_as: &'static str) -> Sandbox {
        let path = path.to_path_buf();
        if !self.known.iter().any(|(p, _)| *p == path) {
            self.known.push((path, shown_as));
        }
        self
    }

    /// What refusals call cascade's paths.
    pub fn known(&self) -> Vec<(PathBuf, &'static str)> {
        self.known.clone()
    }

    /// The ruleset for a command that may reach `reach`: `None` when the
    /// sandbox does not confine (off, or refusing: the caller refuses then).
    pub fn confine(&self, reach: &Reach) -> Result<Option<Confined>, std::io::Error> {
        if !matches!(self.state, SandboxState::Enforced { .. }) {
            return Ok(None);
        }
        let ruleset = self.ruleset(reach).map_err(std::io::Error::other)?;
        let fd: Option<OwnedFd> = ruleset.into();
        Ok(fd.map(|fd| Confined { fd }))
    }

    fn ruleset(&self, reach: &Reach) -> Result<RulesetCreated, landlock::RulesetError> {
        let abi = ABI_WANTED;
        let read = AccessFs::from_read(abi);
        let all = AccessFs::from_all(abi);
        let file_rw = AccessFs::from_file(abi);
        let file_ro = AccessFs::ReadFile | AccessFs::Execute;
        let mut ruleset = Ruleset::default()
            .handle_access(all)?
            .scope(Scope::from_all(abi))?
            .create()?;
        // The system's paths and the operator's are followed through links
        // (`/lib` is one on merged-/usr systems); a command's own are not.
        for path in &self.programs {
            ruleset = add(ruleset, path, read, true)?;
        }
        for path in &self.reads {
            ruleset = add(ruleset, path, AccessFs::ReadFile | AccessFs::ReadDir, true)?;
        }
        for path in &self.devices {
            let rw = AccessFs::ReadFile | AccessFs::WriteFile;
            ruleset = add(ruleset, path, rw, true)?;
        }
        for (dirs, rights) in [(&reach.read, read), (&reach.write, all)] {
            for dir in dirs {
                for path in paths::beneath_except(dir, &self.private) {
                    ruleset = add(ruleset, &path, rights, false)?;
                }
            }
        }
        for (files, rights) in [(&reach.files, file_rw), (&reach.read_files, file_ro)] {
            for file in files {
                ruleset = add(ruleset, file, rights, false)?;
            }
        }
        Ok(ruleset)
    }

    /// Checks the kernel really refuses: a shell confined to the system's
    /// programs reads a file it was not given. It must fail.
    fn probe(&self) -> Result<(), String> {
        let dir = tempfile::tempdir().map_err(|e| format!("cannot probe Landlock: {e}"))?;
        let secret = dir.path().join("probe");
        std::fs::write(&secret, "probe").map_err(|e| format!("cannot probe Landlock: {e}"))?;
        let confined = self
            .ruleset(&Reach::default())
            .map_err(|e| format!("Landlock refused the ruleset: {e}"))?;
        let fd: Option<OwnedFd> = confined.into();
        let fd = fd.ok_or("Landlock is not enforced by this kernel")?;
        let raw = fd.as_raw_fd();
        let mut shell = std::process::Command::new("/bin/sh");
        shell
            .args(["-c", "exec 3< \"$1\"", "cascade-probe"])
            .arg(&secret)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        // SAFETY: `enter` only makes system calls.
        unsafe {
            use std::os::unix::process::CommandExt;
            shell.pre_exec(move || enter(raw));
        }
        match shell.status() {
            Ok(status) if status.success() => {
                Err("Landlock did not refuse a read it was set to refuse".into())
            }
            Ok(_) => Ok(()),
            Err(e) => Err(format!(
                "a process could not start under Landlock ({e}); the kernel or a seccomp filter refuses it"
            )),
        }
    }
}

/// Adds a rule for `path` with `rights`, narrowed to a file's rights when it
/// is not a directory. A path that does not exist (a system directory this
/// machine lacks) adds nothing, and neither does a link when `follow` is off.
fn add(
    ruleset: RulesetCreated,
    path: &Path,
    rights: BitFlags<AccessFs>,
    follow: bool,
) -> Result<RulesetCreated, landlock::RulesetError> {
    let Ok(fd) = paths::open_path(path, follow) else {
        return Ok(ruleset);
    };
    let rights = match paths::is_dir(&fd) {
        Some(true) => rights,
        Some(false) => rights & AccessFs::from_file(ABI_WANTED),
        None => return Ok(ruleset),
    };
    if rights.is_empty() {
        return Ok(ruleset);
    }
    ruleset.add_rule(PathBeneath::new(fd, rights))
}

fn existing(paths: &[&str]) -> Vec<PathBuf> {
    paths
        .iter()
        .map(PathBuf::from)
        .filter(|p| p.exists())
        .collect()
}
