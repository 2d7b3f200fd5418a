//! Checks on values that the YAML shape cannot express: paths that stay inside the
//! repository, globs that compile, nothing listed twice. Each message points at the
//! offending value and says what to write instead.

use super::RetryPolicy;
use super::diagnose::{problem_at, shortened};
use super::file::{
    ApplyPermissionEntry, ConfigFile, DependencyEntries, EnvironmentEntries, EnvironmentEntry,
    ModuleEntry, RetriesEntry,
};
use super::{
    ApplyPermission, ApprovalRule, ApprovalWord, CompiledGlobs, Environment, FILE_NAME, ModuleUnit,
    RepoConfig, TeamName,
};
use crate::problem::{Problem, ProblemKind};
use crate::unit::Tool;
use crate::unit::UnitPath;
use globset::{GlobBuilder, GlobSetBuilder};
use regex::{Regex, RegexBuilder};
use serde_saphyr::Spanned;
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::time::Duration;

/// Turns the parsed file into a `RepoConfig`, or the first problem found, checking
/// environments, implicit_deps, ignore and modules in that order (workflows after
/// environments, whose names they use).
pub(super) fn repo_config(file: ConfigFile) -> Result<RepoConfig, Problem> {
    let environments = environments(file.environments)?;
    let implicit_deps = implicit_deps(file.implicit_deps)?;
    let ignore_set = ignore(&file.ignore)?;
    let modules = modules(file.modules)?;
    let apply_permission = file.apply_permission.map(apply_permission).transpose()?;
    let retries = file.retries.map(retries).transpose()?.unwrap_or_default();
    let drift = file.drift.map(super::drift::drift).transpose()?;
    let mut requirements = file.apply_requirements;
    requirements.dedup();
    let (approvals, pushers_may_approve) = approvals(&file.approvals)?;
    let plan_ttl = file
        .plan_ttl
        .as_ref()
        .map(super::plan_ttl::plan_ttl)
        .transpose()?
        .unwrap_or_default();
    let branches = compile_globs("branches", &file.branches)?;
    let mut commands = file.commands;
    commands.dedup();
    let workflows = super::workflows::workflows(file.workflows, &environments)?;
    let policies = super::policies::policies(file.policies)?;
    let apply = file
        .apply
        .map(|entry| super::apply_mode::apply_mode(entry, &environments))
        .transpose()?
        .unwrap_or_default();
    let prevent_destroy = super::prevent_destroy::prevent_destroy(&file.prevent_destroy)?;
    Ok(RepoConfig {
        environments,
        implicit_deps,
        ignore: ignore_set.patterns.clone(),
        modules,
        drafts: file.drafts,
        autoplan: file.autoplan,
        apply_requirements: requirements,
        apply_permission,
        approvals,
        pushers_may_approve,
        plan_ttl,
        branches,
        commands,
        retries,
        drift,
        workflows,
        policies,
        apply,
        prevent_destroy,
        ignore_set,
    })
}

fn environments(entries: EnvironmentEntries) -> Result<Vec<Environment>, Problem> {
    let mut out: Vec<Environment> = Vec::with_capacity(entries.len());
    for (name, entry) in entries {
        if name.value.trim().is_empty() {
            return Err(problem_at(
                name.referenced,
                "an environment needs a name; write it like `dev: live/dev`",
            ));
        }
        let (path, executor) = match entry.value {
            EnvironmentEntry::Path(path) => {
                (Spanned::new(path, entry.referenced, entry.defined), None)
            }
            EnvironmentEntry::Table(table) => (table.path, table.executor),
        };
        let unit = unit_path(&path, &format!("environment `{}`", shortened(&name.value)))?;
        if let Some(other) = out.iter().find(|env| env.path == unit.as_str()) {
            return Err(problem_at(
                path.referenced,
                format!(
                    "environments `{}` and `{}` both use `{}`; give each environment its own directory",
                    shortened(&other.name),
                    shortened(&name.value),
                    shortened(unit.as_str()),
                ),
            ));
        }
        out.push(Environment {
            name: name.value,
            path: unit.as_str().to_string(),
            executor,
        });
    }
    Ok(out)
}

fn implicit_deps(entries: DependencyEntries) -> Result<BTreeMap<UnitPath, Vec<UnitPath>>, Problem> {
    let mut out = BTreeMap::new();
    for (unit, deps) in entries {
        let key = unit_path(&unit, "`implicit_deps`")?;
        let deps = dependencies(&key, &deps, "`implicit_deps`")?;
        match out.entry(key) {
            Entry::Vacant(slot) => {
                slot.insert(deps);
            }
            Entry::Occupied(slot) => {
                return Err(problem_at(
                    unit.referenced,
                    format!(
                        "`{}` names unit `{}`, which `implicit_deps` already lists; merge the two lists",
                        shortened(&unit.value),
                        shortened(slot.key().as_str())
                    ),
                ));
            }
        }
    }
    Ok(out)
}

/// Checks a unit's dependency list: paths valid, not the unit itself; repeats dropped.
fn dependencies(
    unit: &UnitPath,
    deps: &[Spanned<String>],
    key: &str,
) -> Result<Vec<UnitPath>, Problem> {
    let mut out: Vec<UnitPath> = Vec::with_capacity(deps.len());
    for dep in deps {
        let path = unit_path(dep, key)?;
        if &path == unit {
            return Err(problem_at(
                dep.referenced,
                format!(
                    "`{}` cannot depend on itself; remove it from its own list in {key}",
                    shortened(unit.as_str())
                ),
            ));
        }
        if !out.contains(&path) {
            out.push(path);
        }
    }
    Ok(out)
}

/// Which reviews count, from `approvals`' words: `head` and `any_head` exclude each other.
fn approvals(words: &[ApprovalWord]) -> Result<(ApprovalRule, bool), Problem> {
    let has = |w: ApprovalWord| words.contains(&w);
    if has(ApprovalWord::Head) && has(ApprovalWord::AnyHead) {
        return Err(Problem::new(
            ProblemKind::Config,
            "`approvals` lists both `head` and `any_head`; keep the one you mean \
             (`head` counts only a review of the current head)",
        )
        .at(FILE_NAME, None, None));
    }
    let rule = if has(ApprovalWord::AnyHead) {
        ApprovalRule::AnyHead
    } else {
        ApprovalRule::Head
    };
    Ok((rule, has(ApprovalWord::AllowPushers)))
}

fn ignore(globs: &[Spanned<String>]) -> Result<CompiledGlobs, Problem> {
    compile_globs("ignore", globs)
}

/// Globs of `key` (`ignore`, `drift.units`), repo-relative, compiled into one set.
pub(super) fn compile_globs(
    key: &str,
    globs: &[Spanned<String>],
) -> Result<CompiledGlobs, Problem> {
    let mut patterns = Vec::with_capacity(globs.len());
    let mut set = GlobSetBuilder::new();
    for glob in globs {
        let pattern = glob.value.strip_prefix("./").unwrap_or(&glob.value);
        if pattern.trim().is_empty() {
            return Err(problem_at(
                glob.referenced,
                format!("empty glob in `{key}`; remove it or write a pattern like `sandbox/**`"),
            ));
        }
        let shown = shortened(pattern);
        if pattern.starts_with('/') {
            return Err(problem_at(
                glob.referenced,
                format!(
                    "`{key}` glob `{shown}` starts with `/`; globs match paths relative to \
                     the repository root, so write `{}`",
                    shortened(pattern.trim_start_matches('/'))
                ),
            ));
        }
        // `*` stays within one directory, as in .gitignore; `**` crosses directories.
        let compiled = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|err| {
                problem_at(
                    glob.referenced,
                    format!(
                        "`{key}` glob `{shown}` is invalid: {}; fix the pattern \
                     (`*`, `**`, `?`, `[abc]` and `{{a,b}}` are supported)",
                        err.kind()
                    ),
                )
            })?;
        set.add(compiled);
        patterns.push(pattern.to_string());
    }
    let set = set.build().map_err(|err| {
        // Every glob compiled on its own, so this is globset's own limit being hit.
        Problem::new(
            ProblemKind::Config,
            format!("`{key}` globs cannot be combined: {err}"),
        )
        .at(FILE_NAME, None, None)
    })?;
    Ok(CompiledGlobs { patterns, set })
}

fn modules(entries: Vec<ModuleEntry>) -> Result<Vec<ModuleUnit>, Problem> {
    let mut out: Vec<ModuleUnit> = Vec::with_capacity(entries.len());
    let mut first_lines: Vec<u64> = Vec::with_capacity(entries.len());
    for entry in entries {
        let path = unit_path(&entry.path, "`modules`")?;
        if let Some(i) = out.iter().position(|module| module.path == path) {
            return Err(problem_at(
                entry.path.referenced,
                format!(
                    "module `{}` is already listed at line {}; remove one of the entries",
                    shortened(path.as_str()),
                    first_lines[i]
                ),
            ));
        }
        let depends_on = dependencies(&path, &entry.depends_on, "`depends_on`")?;
        first_lines.push(entry.path.referenced.line());
        out.push(ModuleUnit {
            path,
            depends_on,
            executor: entry.executor.unwrap_or(Tool::Terraform),
        });
    }
    Ok(out)
}

/// GitHub logins: letters, digits and single hyphens, at most 39 characters (bots add `[bot]`).
fn is_login(text: &str) -> bool {
    let name = text.strip_suffix("[bot]").unwrap_or(text);
    !name.is_empty()
        && name.len() <= 39
        && !name.starts_with('-')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// A GitLab username or one segment of a group's path: letters, digits, `_`, `-` and
/// `.`, not starting with `-` or `.` nor ending with `.` (GitLab's rule).
fn is_gitlab_name(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 255
        && !text.starts_with(['-', '.'])
        && !text.ends_with('.')
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Group levels GitLab allows: a top-level group and up to 20 subgroups.
const GITLAB_GROUP_DEPTH: usize = 21;

/// A team slug as GitHub makes it from the team's name.
fn is_team_slug(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 100
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn apply_permission(spanned: Spanned<ApplyPermissionEntry>) -> Result<ApplyPermission, Problem> {
    let entry = spanned.value;
    let out = people(&entry.users, &entry.teams, "apply_permission")?;
    if out.users.is_empty() && out.teams.is_empty() {
        return Err(problem_at(
            spanned.referenced,
            "`apply_permission` lists no users and no teams, so nobody could apply; list \
             `users` and/or `teams`, or remove the key to let everyone with write permission apply",
        ));
    }
    Ok(out)
}

/// Users and teams as `apply_permission` (and a policy set's `owners`, `key`) lists
/// them, checked, without repeats; empty when both lists are.
pub(super) fn people(
    users: &[Spanned<String>],
    teams: &[Spanned<String>],
    key: &str,
) -> Result<ApplyPermission, Problem> {
    let mut out = ApplyPermission::default();
    for user in users {
        let login = user.value.trim().trim_start_matches('@');
        if !is_login(login) && !is_gitlab_name(login) {
            return Err(problem_at(
                user.referenced,
                format!(
                    "`{}` in `{key}.users` is not a GitHub login or GitLab username; \
                     write them like `alice`",
                    user.value.trim()
                ),
            ));
        }
        if !out.lists_user(login) {
            out.users.push(login.to_string());
        }
    }
    for team in teams {
        let text = team.value.trim();
        // GitHub's `org/team-slug`, or a GitLab group's full path (`acme/platform/sre`).
        let github =
            |org: &str, slug: &str| is_login(org) && !org.ends_with("[bot]") && is_team_slug(slug);
        let gitlab = |org: &str, rest: &str| {
            is_gitlab_name(org)
                && rest.split('/').count() < GITLAB_GROUP_DEPTH
                && rest.split('/').all(is_gitlab_name)
        };
        let parsed = text.split_once('/').and_then(|(org, slug)| {
            (github(org, slug) || gitlab(org, slug)).then(|| TeamName {
                org: org.to_string(),
                slug: slug.to_ascii_lowercase(),
            })
        });
        let Some(name) = parsed else {
            return Err(problem_at(
                team.referenced,
                format!(
                    "`{text}` in `{key}.teams` is not a team; write it as \
                     `organization/team-slug` (GitHub) or a group's full path (GitLab), like \
                     `acme/platform`"
                ),
            ));
        };
        if !out.teams.contains(&name) {
            out.teams.push(name);
        }
    }
    Ok(out)
}

/// A name that goes into messages, the comment and commands (a workflow's, a policy
/// set's): `[a-z0-9_-]+`, at most `max` characters.
pub(super) fn is_plain_name(text: &str, max: usize) -> bool {
    !text.is_empty()
        && text.len() <= max
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-'))
}

/// A repo-relative directory, normalised; `place` says where it was written, for messages.
pub(super) fn unit_path(raw: &Spanned<String>, place: &str) -> Result<UnitPath, Problem> {
    let text = raw.value.trim();
    let shown = shortened(text);
    let at = raw.referenced;
    if text.is_empty() {
        return Err(problem_at(
            at,
            format!(
                "empty path in {place}; write a directory relative to the repository root, \
                 like `live/dev`, or `.` for the root"
            ),
        ));
    }
    let drive = text.as_bytes().get(1) == Some(&b':') && text.as_bytes()[0].is_ascii_alphabetic();
    if text.starts_with(['/', '\\']) || drive {
        return Err(problem_at(
            at,
            format!(
                "`{shown}` in {place} is an absolute path; write it relative to the repository \
                 root, like `live/dev`"
            ),
        ));
    }
    // A backslash is a character of a directory's name (as git keeps it), so
    // `live\dev` would name one directory, not two: refused rather than read
    // either way, since whoever wrote it most likely meant `live/dev`.
    if text.contains('\\') {
        return Err(problem_at(
            at,
            format!(
                "`{shown}` in {place} has a backslash, which cascade reads as part of a \
                 directory's name; write `/` between directories, like `{}`",
                shortened(&text.replace('\\', "/"))
            ),
        ));
    }
    let unit = UnitPath::new(text);
    let parts: Vec<&str> = unit.as_str().split('/').collect();
    if parts.contains(&"..") {
        return Err(problem_at(
            at,
            format!(
                "`{shown}` in {place} leaves the repository; write paths relative to the \
                 repository root, without `..`"
            ),
        ));
    }
    if unit.as_str() != "." && parts.iter().any(|part| part.is_empty() || *part == ".") {
        let plain: Vec<&str> = parts
            .into_iter()
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        let plain = if plain.is_empty() {
            ".".to_string()
        } else {
            plain.join("/")
        };
        return Err(problem_at(
            at,
            format!(
                "`{shown}` in {place} is not a plain path; write `{}`",
                shortened(&plain)
            ),
        ));
    }
    Ok(unit)
}

/// The most patterns `retries.transient` may list.
const MAX_TRANSIENT_PATTERNS: usize = 32;
/// The longest pattern `retries.transient` may hold, in bytes.
const MAX_TRANSIENT_PATTERN_BYTES: usize = 512;
/// The most memory one compiled pattern may take (the regex crate's own limits).
const MAX_TRANSIENT_REGEX_BYTES: usize = 256 * 1024;
/// The longest first wait `retries.base` may ask for.
const MAX_RETRY_BASE: Duration = Duration::from_secs(5 * 60);
/// The most tries, and the largest factor, `retries` may ask for.
const MAX_ATTEMPTS: u32 = 10;
const MAX_FACTOR: u32 = 10;

fn retries(spanned: Spanned<RetriesEntry>) -> Result<RetryPolicy, Problem> {
    let entry = spanned.value;
    let mut policy = RetryPolicy::default();
    if let Some(attempts) = entry.attempts {
        if !(1..=MAX_ATTEMPTS).contains(&attempts.value) {
            return Err(problem_at(
                attempts.referenced,
                format!(
                    "`retries.attempts` is {}; write a number of tries from 1 (no retry) to \
                     {MAX_ATTEMPTS}, the first try included",
                    attempts.value
                ),
            ));
        }
        policy.attempts = attempts.value;
    }
    if let Some(factor) = entry.factor {
        if !(1..=MAX_FACTOR).contains(&factor.value) {
            return Err(problem_at(
                factor.referenced,
                format!(
                    "`retries.factor` is {}; write a whole number from 1 (equal waits) to \
                     {MAX_FACTOR}",
                    factor.value
                ),
            ));
        }
        policy.factor = factor.value;
    }
    if let Some(base) = entry.base {
        policy.base = match duration(base.value.trim()) {
            Some(wait) if !wait.is_zero() && wait <= MAX_RETRY_BASE => wait,
            _ => {
                return Err(problem_at(
                    base.referenced,
                    format!(
                        "`retries.base` `{}` is not a wait from 1ms to 5m; write it like \
                         `500ms`, `5s` or `1m`",
                        shortened(&base.value)
                    ),
                ));
            }
        };
    }
    if entry.transient.len() > MAX_TRANSIENT_PATTERNS {
        return Err(problem_at(
            spanned.referenced,
            format!(
                "`retries.transient` lists {} patterns; list at most {MAX_TRANSIENT_PATTERNS} \
                 (one pattern can join several with `|`)",
                entry.transient.len()
            ),
        ));
    }
    for pattern in &entry.transient {
        policy.extra.push(transient_pattern(pattern)?);
    }
    Ok(policy)
}

/// One `retries.transient` pattern, compiled within bounded size.
fn transient_pattern(pattern: &Spanned<String>) -> Result<Regex, Problem> {
    let text = &pattern.value;
    if text.trim().is_empty() {
        return Err(problem_at(
            pattern.referenced,
            "empty pattern in `retries.transient` (it would match every failure); remove it \
             or write a regular expression like `quota exceeded`",
        ));
    }
    if text.len() > MAX_TRANSIENT_PATTERN_BYTES {
        return Err(problem_at(
            pattern.referenced,
            format!(
                "a pattern in `retries.transient` is {} bytes long; keep each under \
                 {MAX_TRANSIENT_PATTERN_BYTES} bytes",
                text.len()
            ),
        ));
    }
    RegexBuilder::new(text)
        .size_limit(MAX_TRANSIENT_REGEX_BYTES)
        .dfa_size_limit(MAX_TRANSIENT_REGEX_BYTES)
        .nest_limit(32)
        .build()
        .map_err(|err| {
            let why = match err {
                regex::Error::CompiledTooBig(_) => "it compiles too big; simplify it".to_string(),
                regex::Error::Syntax(_) => "it is not a valid regular expression (Rust `regex` \
                    syntax); fix it"
                    .to_string(),
                _ => "it cannot be compiled; simplify it".to_string(),
            };
            problem_at(
                pattern.referenced,
                format!(
                    "`retries.transient` pattern `{}` is refused: {why}",
                    shortened(text)
                ),
            )
        })
}

/// A wait written like `500ms`, `5s`, `2m` or `1h` (what Go's durations also read, so
/// terraform's `-lock-timeout` takes it too).
pub(super) fn duration(text: &str) -> Option<Duration> {
    let digits = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(digits);
    let number: u64 = number.parse().ok()?;
    match unit.trim() {
        "ms" => Some(Duration::from_millis(number)),
        "s" => Some(Duration::from_secs(number)),
        "m" => number.checked_mul(60).map(Duration::from_secs),
        "h" => number.checked_mul(3600).map(Duration::from_secs),
        _ => None,
    }
}
