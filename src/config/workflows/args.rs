//! The extra arguments a workflow may give the built-in `init`, `plan` and `apply`
//! (cascade's allow-list of terraform 1.x flags), and the resource addresses of a
//! two-stage apply (`apply.targets`).
//!
//! An allow-list, not a deny-list: a flag cascade does not know could change what is
//! planned, what is applied or where state goes, which would make the reviewed plan a
//! different thing from the applied one. The flags cascade refuses by name get a message
//! saying why and what to do instead; every other unknown flag is refused as not listed.

use super::vars::{is_variable_name, looks_like_credential};
use crate::config::diagnose::{problem_at, shortened};
use crate::problem::Problem;
use regex::Regex;
use serde_saphyr::{Location, Spanned};
use std::sync::LazyLock;

/// The most arguments one phase, or one `run` command, may list, and the longest one.
pub(super) const MAX_ARGS: usize = 64;
pub(super) const MAX_ARG_BYTES: usize = 4096;
/// The most addresses `apply.targets` may list, and the longest one.
const MAX_TARGETS: usize = 32;
const MAX_TARGET_BYTES: usize = 1024;
/// The most `-parallelism` may ask for.
const MAX_PARALLELISM: u32 = 256;

/// A built-in step whose arguments a workflow may extend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    Init,
    Plan,
    Apply,
}

impl Phase {
    fn key(self) -> &'static str {
        match self {
            Phase::Init => "init.extra_args",
            Phase::Plan => "plan.extra_args",
            Phase::Apply => "apply.extra_args",
        }
    }

    fn allowed(self) -> &'static [Allowed] {
        match self {
            Phase::Init => INIT,
            Phase::Plan => PLAN,
            Phase::Apply => APPLY,
        }
    }
}

/// What an allowed flag takes after `=`.
#[derive(Clone, Copy, Debug)]
enum Takes {
    /// Nothing: the flag alone (`-upgrade`).
    Nothing,
    /// `true` or `false`.
    Bool,
    /// A whole number from 1 to [`MAX_PARALLELISM`].
    Count,
    /// A wait, like `30s` or `5m` (at most an hour).
    Wait,
    /// Exactly this word.
    Word(&'static str),
    /// `NAME=VALUE` with a plain name that is not a credential's.
    Variable,
    /// A file relative to the unit's directory, without `..`.
    File,
    /// A file as for [`Takes::File`], or `KEY=VALUE` (a backend setting, not a credential).
    FileOrSetting,
}

/// One flag of the allow-list.
struct Allowed {
    flag: &'static str,
    takes: Takes,
}

const fn allowed(flag: &'static str, takes: Takes) -> Allowed {
    Allowed { flag, takes }
}

const INIT: &[Allowed] = &[
    allowed("-upgrade", Takes::Nothing),
    allowed("-reconfigure", Takes::Nothing),
    allowed("-backend-config", Takes::FileOrSetting),
    allowed("-get", Takes::Bool),
    allowed("-lockfile", Takes::Word("readonly")),
];

const PLAN: &[Allowed] = &[
    allowed("-parallelism", Takes::Count),
    allowed("-refresh", Takes::Bool),
    allowed("-var", Takes::Variable),
    allowed("-var-file", Takes::File),
    allowed("-compact-warnings", Takes::Nothing),
    allowed("-lock", Takes::Bool),
    allowed("-lock-timeout", Takes::Wait),
];

const APPLY: &[Allowed] = &[
    allowed("-parallelism", Takes::Count),
    allowed("-compact-warnings", Takes::Nothing),
    allowed("-lock-timeout", Takes::Wait),
];

/// Flags refused in every phase, with why and what to do instead.
const REFUSED: &[(&[&str], &str)] = &[
    (
        &["-chdir"],
        "cascade runs each unit in its own directory; move the unit or add it under \
         `modules` instead",
    ),
    (
        &["-plugin-dir"],
        "providers come from their registries through cascade's provider cache; pin their \
         versions in `.terraform.lock.hcl` instead",
    ),
    (
        &["-from-module"],
        "it copies a module into the unit's directory, and cascade plans the unit as \
         committed; commit the module's call instead",
    ),
    (
        &["-target", "-replace", "-destroy", "-refresh-only"],
        "it changes what is planned and applied apart from the reviewed change; for a \
         two-stage apply list the first stage's addresses under `apply.targets`",
    ),
    (
        &["-out", "-state", "-state-out", "-backup"],
        "cascade decides where plans go, and state goes where the backend keeps it; \
         configure the backend instead (`-backend-config` in `init.extra_args`)",
    ),
    (
        &[
            "-auto-approve",
            "-input",
            "-no-color",
            "-json",
            "-detailed-exitcode",
        ],
        "cascade sets it itself; remove it",
    ),
];

/// A phase's extra arguments, checked against its allow-list.
pub(super) fn extra_args(phase: Phase, args: &[Spanned<String>]) -> Result<Vec<String>, Problem> {
    if let Some(extra) = args.get(MAX_ARGS) {
        return Err(problem_at(
            extra.referenced,
            format!(
                "`{}` lists {} arguments; list at most {MAX_ARGS}",
                phase.key(),
                args.len()
            ),
        ));
    }
    args.iter()
        .map(|arg| {
            extra_arg(phase, &arg.value)
                .map(|()| arg.value.clone())
                .map_err(|why| problem_at(arg.referenced, why))
        })
        .collect()
}

/// Why `arg` is refused in `phase`, if it is.
fn extra_arg(phase: Phase, arg: &str) -> Result<(), String> {
    let key = phase.key();
    let shown = shortened(arg);
    if arg.len() > MAX_ARG_BYTES || arg.contains('\0') {
        return Err(format!(
            "an argument in `{key}` is longer than {MAX_ARG_BYTES} bytes or holds a NUL byte; \
             shorten it"
        ));
    }
    if !arg.starts_with('-') {
        return Err(format!(
            "`{shown}` in `{key}` is not a flag; write each argument as one list item, \
             `-name` or `-name=value`, like `-var-file=prod.tfvars`"
        ));
    }
    // Terraform reads `--name` as `-name`.
    let arg = if arg.starts_with("--") {
        &arg[1..]
    } else {
        arg
    };
    let (flag, value) = match arg.split_once('=') {
        Some((flag, value)) => (flag, Some(value)),
        None => (arg, None),
    };
    if let Some((_, why)) = REFUSED.iter().find(|(flags, _)| flags.contains(&flag)) {
        return Err(format!("`{shown}` in `{key}` is refused: {why}"));
    }
    let Some(allowed) = phase.allowed().iter().find(|a| a.flag == flag) else {
        return Err(format!(
            "`{shown}` in `{key}` is not on cascade's allow-list; the allowed ones are {}",
            allow_list(phase)
        ));
    };
    let form = form(allowed);
    let Some(value) = value else {
        return match allowed.takes {
            Takes::Nothing => Ok(()),
            _ => Err(format!(
                "`{shown}` in `{key}` needs its value in the same item; write `{form}`"
            )),
        };
    };
    let fits = match allowed.takes {
        Takes::Nothing => false,
        Takes::Bool => matches!(value, "true" | "false"),
        Takes::Count => value
            .parse::<u32>()
            .is_ok_and(|n| (1..=MAX_PARALLELISM).contains(&n)),
        Takes::Wait => crate::config::validate::duration(value)
            .is_some_and(|wait| wait <= super::MAX_STEP_TIMEOUT),
        Takes::Word(word) => value == word,
        Takes::Variable => return variable(key, &shown, value),
        Takes::File => return relative_file(key, &shown, value),
        Takes::FileOrSetting => match value.split_once('=') {
            Some((setting, _)) => return backend_setting(key, &shown, setting),
            None => return relative_file(key, &shown, value),
        },
    };
    if fits {
        Ok(())
    } else {
        let range = match allowed.takes {
            Takes::Count => format!(", N from 1 to {MAX_PARALLELISM}"),
            Takes::Wait => ", like `30s` or `5m`, at most 1h".to_string(),
            _ => String::new(),
        };
        Err(format!(
            "`{shown}` in `{key}` is not allowed; write `{form}`{range}"
        ))
    }
}

/// `-var=NAME=VALUE`: a plain name, not a credential's.
fn variable(key: &str, shown: &str, value: &str) -> Result<(), String> {
    let name = value.split_once('=').map(|(name, _)| name);
    match name {
        Some(name) if is_variable_name(name) || is_tf_identifier(name) => {
            if looks_like_credential(name) {
                Err(format!(
                    "`{shown}` in `{key}` looks like a credential, and a repository may select \
                     the server's credentials by name (`from_server: NAME` in `env`, as \
                     `TF_VAR_{}`), never define them",
                    shortened(name)
                ))
            } else {
                Ok(())
            }
        }
        _ => Err(format!(
            "`{shown}` in `{key}` is not a variable; write `-var=NAME=VALUE`, like \
             `-var=region=eu-west-1`"
        )),
    }
}

/// A terraform identifier: letters, digits, `_` and `-`, starting with a letter or `_`.
fn is_tf_identifier(name: &str) -> bool {
    name.bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

/// `-backend-config=KEY=VALUE`: a plain key, not a credential's.
fn backend_setting(key: &str, shown: &str, setting: &str) -> Result<(), String> {
    if !is_tf_identifier(setting) {
        return Err(format!(
            "`{shown}` in `{key}` is not a backend setting; write `-backend-config=KEY=VALUE` \
             or `-backend-config=FILE`"
        ));
    }
    if looks_like_credential(setting) {
        return Err(format!(
            "`{shown}` in `{key}` looks like a credential, and a repository may select the \
             server's credentials by name (`from_server: NAME` in `env`), never define them; \
             give the backend its credentials through the environment instead"
        ));
    }
    Ok(())
}

/// A file relative to the unit's directory that stays inside the repository: not
/// absolute, no `..`.
fn relative_file(key: &str, shown: &str, path: &str) -> Result<(), String> {
    let absolute = path.starts_with(['/', '\\', '~'])
        || (path.as_bytes().get(1) == Some(&b':') && path.as_bytes()[0].is_ascii_alphabetic());
    if path.is_empty() || absolute {
        return Err(format!(
            "`{shown}` in `{key}` does not name a file in the repository; write a path \
             relative to the unit's directory, like `prod.tfvars`"
        ));
    }
    if path.split(['/', '\\']).any(|part| part == "..") {
        return Err(format!(
            "`{shown}` in `{key}` leaves the unit's directory with `..`; put the file in the \
             unit's directory (or below it) and name it from there"
        ));
    }
    Ok(())
}

/// How a flag is written, for messages.
fn form(allowed: &Allowed) -> String {
    let flag = allowed.flag;
    match allowed.takes {
        Takes::Nothing => flag.to_string(),
        Takes::Bool => format!("{flag}=true|false"),
        Takes::Count => format!("{flag}=N"),
        Takes::Wait => format!("{flag}=DURATION"),
        Takes::Word(word) => format!("{flag}={word}"),
        Takes::Variable => format!("{flag}=NAME=VALUE"),
        Takes::File => format!("{flag}=FILE"),
        Takes::FileOrSetting => format!("{flag}=FILE|KEY=VALUE"),
    }
}

fn allow_list(phase: Phase) -> String {
    let forms: Vec<String> = phase
        .allowed()
        .iter()
        .map(|a| format!("`{}`", form(a)))
        .collect();
    forms.join(", ")
}

/// A resource address as terraform writes it: `module.NAME[INDEX].` prefixes, an
/// optional `data.`, `TYPE.NAME` and an `[INDEX]` (a number or a quoted key without
/// spaces). `module.NAME` alone, a whole module, reads as `TYPE.NAME` and is one too.
static ADDRESS: LazyLock<Regex> = LazyLock::new(|| {
    let name = r"[A-Za-z_][A-Za-z0-9_-]*";
    let index = r#"(\[([0-9]+|"[^"\\\s]*")\])?"#;
    Regex::new(&format!(
        r"^(module\.{name}{index}\.)*(data\.)?{name}\.{name}{index}$"
    ))
    .expect("the address pattern compiles")
});

/// `apply.targets`, checked.
pub(super) fn targets(at: Location, targets: &[Spanned<String>]) -> Result<Vec<String>, Problem> {
    if targets.len() > MAX_TARGETS {
        return Err(problem_at(
            targets.get(MAX_TARGETS).map_or(at, |t| t.referenced),
            format!(
                "`apply.targets` lists {} addresses; list at most {MAX_TARGETS}",
                targets.len()
            ),
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(targets.len());
    for target in targets {
        let text = target.value.as_str();
        if text.len() > MAX_TARGET_BYTES || !ADDRESS.is_match(text) {
            return Err(problem_at(
                target.referenced,
                format!(
                    "`{}` in `apply.targets` is not a resource address; write it as terraform \
                     does, like `helm_release.crds` or `module.eks.aws_eks_cluster.this[0]`",
                    shortened(text)
                ),
            ));
        }
        if out.iter().any(|t| t == text) {
            return Err(problem_at(
                target.referenced,
                format!(
                    "`{}` appears twice in `apply.targets`; keep one",
                    shortened(text)
                ),
            ));
        }
        out.push(text.to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(phase: Phase, arg: &str) -> String {
        extra_arg(phase, arg).expect_err(arg)
    }

    #[test]
    fn the_allow_list_takes_its_flags_in_their_own_phase_only() {
        for (phase, arg) in [
            (Phase::Init, "-upgrade"),
            (Phase::Init, "--reconfigure"),
            (Phase::Init, "-backend-config=backend.hcl"),
            (Phase::Init, "-backend-config=bucket=acme-state"),
            (Phase::Init, "-get=false"),
            (Phase::Init, "-lockfile=readonly"),
            (Phase::Plan, "-parallelism=4"),
            (Phase::Plan, "-refresh=false"),
            (Phase::Plan, "-var=region=eu-west-1"),
            (Phase::Plan, "-var=tags={a=1}"),
            (Phase::Plan, "-var-file=env/prod.tfvars"),
            (Phase::Plan, "-compact-warnings"),
            (Phase::Plan, "-lock=false"),
            (Phase::Plan, "-lock-timeout=5m"),
            (Phase::Apply, "-parallelism=20"),
            (Phase::Apply, "-compact-warnings"),
            (Phase::Apply, "-lock-timeout=30s"),
        ] {
            assert_eq!(extra_arg(phase, arg), Ok(()), "{phase:?} {arg}");
        }
        assert!(refused(Phase::Apply, "-var=a=b").contains("not on cascade's allow-list"));
        assert!(refused(Phase::Init, "-parallelism=4").contains("not on cascade's allow-list"));
    }

    #[test]
    fn values_are_checked() {
        for (phase, arg, says) in [
            (Phase::Plan, "-parallelism=0", "write `-parallelism=N`"),
            (Phase::Plan, "-parallelism=1000", "write `-parallelism=N`"),
            (Phase::Plan, "-refresh=yes", "write `-refresh=true|false`"),
            (
                Phase::Plan,
                "-lock-timeout=2h",
                "write `-lock-timeout=DURATION`",
            ),
            (
                Phase::Init,
                "-lockfile=update",
                "write `-lockfile=readonly`",
            ),
            (Phase::Init, "-upgrade=true", "write `-upgrade`"),
            (Phase::Plan, "-var-file", "needs its value in the same item"),
            (Phase::Plan, "-var=x", "not a variable"),
            (Phase::Plan, "-var=db_password=x", "looks like a credential"),
            (
                Phase::Init,
                "-backend-config=secret_key=x",
                "looks like a credential",
            ),
            (
                Phase::Init,
                "-backend-config=../b.hcl",
                "leaves the unit's directory",
            ),
            (Phase::Plan, "-var-file=/etc/passwd", "does not name a file"),
            (Phase::Plan, "-var-file=~/x", "does not name a file"),
            (
                Phase::Plan,
                "-var-file=a/../../x",
                "leaves the unit's directory",
            ),
            (Phase::Plan, "prod.tfvars", "is not a flag"),
            (
                Phase::Plan,
                "--chdir=..",
                "runs each unit in its own directory",
            ),
            (Phase::Apply, "-auto-approve", "cascade sets it itself"),
            (Phase::Apply, "-target=a.b", "`apply.targets`"),
            (Phase::Plan, "-state=x", "cascade decides where plans go"),
            (Phase::Plan, "-", "not on cascade's allow-list"),
            (Phase::Plan, "--", "not on cascade's allow-list"),
        ] {
            let why = refused(phase, arg);
            assert!(why.contains(says), "{arg}: {why}");
        }
    }

    #[test]
    fn addresses_are_terraforms() {
        for text in [
            "helm_release.crds",
            "module.eks.aws_eks_cluster.this[0]",
            "module.a[\"x\"].module.b.null_resource.c",
            "data.aws_caller_identity.current",
            "module.crds",
            "kubernetes_manifest.crd[\"certs.example.com\"]",
        ] {
            assert!(ADDRESS.is_match(text), "{text}");
        }
        for text in [
            "helm_release",
            "-helm_release.crds",
            "helm_release.crds extra",
            "a.b[\"with space\"]",
            "a.b.c",
            "",
        ] {
            assert!(!ADDRESS.is_match(text), "{text}");
        }
    }
}
