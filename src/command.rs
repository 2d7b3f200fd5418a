//! Commands in pull-request comments: turns a comment's text into the `/plan`, `/apply`,
//! `/destroy`, `/approve-policies`, `/unlock` and `/help` commands it holds, and into a reply for each
//! line that starts like one of our commands but is wrong.
//!
//! It owns reading: which lines count ([`parse_comment`]), what each command's arguments
//! mean, what one comment asks for when it repeats a command ([`read_comment`]: each
//! command at most once), and the wording of every parse error a user can see (all in
//! `Mistake::message`). It never decides who may run a command or whether a plan id is the
//! PR's latest: the caller does.
//!
//! Reading goes in two steps, as in rust-lang/bors: first drop what Markdown hides (code,
//! quotes, HTML comments; see `markdown`), then hand each remaining line that starts with
//! `/` or `cascade ` to the parser in the `COMMANDS` table whose name it carries.
//!
//! Both spellings are read on every forge (GitLab runs `/unlock` as its own quick action
//! and never sends it); what cascade writes back uses the forge's [`Spelling`].

mod destroy;
mod markdown;
#[cfg(test)]
mod reading_tests;
#[cfg(test)]
mod spelling_tests;
mod state;
#[cfg(test)]
mod tests;
mod unit_glob;

use crate::forge::Spelling;
use crate::inert;
use crate::plan::PlanId;
use crate::unit::{StateChange, UnitPath};
use std::fmt;
pub use unit_glob::UnitGlob;
use unit_glob::unit_globs;

/// A command a person posted on a pull request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `/plan [unit …]`: re-plan the units these globs match among those the PR affects,
    /// and their dependents (an exact path is a glob that matches only itself); no units
    /// means every unit the PR affects.
    Plan { units: Vec<UnitGlob> },
    /// `/apply <id> [unit …]`: apply exactly the plan with this id; with units, only the
    /// units of it that these globs match (none: the whole plan).
    Apply { id: PlanId, units: Vec<UnitGlob> },
    /// `/destroy unit…`: plan a destroy of the units these globs match at the head, in
    /// reverse order (dependents first), to be applied with `/apply <id>`.
    Destroy { units: Vec<UnitGlob> },
    /// `/approve-policies <id>`: approve, for exactly this plan id, the failures of the
    /// policy sets the commenter owns.
    ApprovePolicies { id: PlanId },
    /// `/import <unit> <address> <id>` or `/state rm <unit> <address>`: change one unit's
    /// state by hand (off unless the repository turns it on).
    ChangeState { unit: UnitPath, change: StateChange },
    /// `/unlock`: release the PR's locks and discard its plan.
    Unlock,
    /// `/help`: reply with [`help_text`].
    Help,
}

/// A line that starts with one of our commands but is wrong: what the bot replies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandError {
    /// The line as written (indentation and HTML comments removed).
    pub line: String,
    /// Markdown for the reply; it says what to post instead.
    pub message: String,
}

/// One line of a comment that is ours: a command, or the reply to a malformed one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parsed {
    Command(Command),
    Error(CommandError),
}

/// Every command (and mistake) in a comment body, in order.
///
/// A command is `/` or `cascade` (any case) and one space or tab, then the command word;
/// it counts only at the start of a line (up to 3 spaces of indentation, as in
/// Markdown), outside fenced and indented code blocks, code spans, block quotes (with their
/// continuation lines), HTML comments and `<pre>` blocks. Inside `<details>` it counts. The
/// command word ends at whitespace or a comma, so `/planned` and `/applyx` are not ours, and
/// only `/plan`, `/apply`, `/destroy`, `/approve-policies`, `/unlock` and `/help` are: other
/// `/words` belong to other bots.
/// Arguments are separated by whitespace or commas, a code span around an argument is
/// dropped, and one period at the end of the line is punctuation. Mistakes are worded for
/// GitHub; see [`parse_comment_spelled`].
pub fn parse_comment(body: &str) -> Vec<Parsed> {
    parse_comment_spelled(body, &Spelling::GITHUB)
}

/// [`parse_comment`], with mistakes worded as commands are written on the forge `spelling`
/// is for.
pub fn parse_comment_spelled(body: &str, spelling: &Spelling) -> Vec<Parsed> {
    markdown::plain_lines(body)
        .iter()
        .filter_map(|line| parse_line(line.trim(), spelling))
        .collect()
}

/// What one comment asks for: each command at most once, in the order first written,
/// and the distinct mistakes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommentCommands {
    pub commands: Vec<Command>,
    pub mistakes: Vec<CommandError>,
}

/// [`parse_comment`] with repeats folded, so a comment runs each command at most once
/// however many lines repeat it: `/plan` lines merge into one (a bare `/plan`, which plans
/// everything, wins over named units), `/unlock` and `/help` count once, an `/apply` of the
/// same id counts once and `/apply` of two different ids is a mistake (neither runs), and a
/// mistake made twice is reported once; different `/import` and `/state rm` lines each
/// run, in order. Mistakes are worded with `spelling`.
pub fn read_comment(body: &str, spelling: &Spelling) -> CommentCommands {
    let mut read = CommentCommands::default();
    let mut conflicting: Option<(String, Vec<String>)> = None;
    for parsed in parse_comment_spelled(body, spelling) {
        match parsed {
            Parsed::Error(mistake) => {
                if !read.mistakes.iter().any(|m| m.message == mistake.message) {
                    read.mistakes.push(mistake);
                }
            }
            Parsed::Command(command) => {
                // Each state change is its own command: only the same one twice is a repeat.
                let same_kind = read.commands.iter_mut().find(|c| match (&**c, &command) {
                    (Command::ChangeState { .. }, Command::ChangeState { .. }) => **c == command,
                    _ => std::mem::discriminant(*c) == std::mem::discriminant(&command),
                });
                match (same_kind, command) {
                    (None, command) => read.commands.push(command),
                    (Some(Command::Plan { units }), Command::Plan { units: more }) => {
                        merge_units(units, more);
                    }
                    (Some(Command::Destroy { units }), Command::Destroy { units: more }) => {
                        // Both name units: the destroy is of every unit either names.
                        merge_units(units, more);
                    }
                    (
                        Some(Command::Apply { id, units }),
                        Command::Apply {
                            id: other,
                            units: more,
                        },
                    ) if *id == other => {
                        merge_units(units, more);
                    }
                    (Some(Command::Apply { id, .. }), Command::Apply { id: other, units }) => {
                        let ids = &mut conflicting
                            .get_or_insert_with(|| {
                                (
                                    Command::Apply {
                                        id: other.clone(),
                                        units,
                                    }
                                    .spelled(spelling),
                                    vec![id.to_string()],
                                )
                            })
                            .1;
                        if !ids.contains(&other.to_string()) {
                            ids.push(other.to_string());
                        }
                    }
                    (Some(_), _) => {}
                }
            }
        }
    }
    if let Some((line, ids)) = conflicting {
        read.commands
            .retain(|c| !matches!(c, Command::Apply { .. }));
        read.mistakes.push(CommandError {
            line,
            message: Mistake::SeveralPlanIds { ids }.message(spelling),
        });
    }
    read
}

/// Two lines of one command's units as one: the whole plan (no units) wins over named
/// units, and a unit named twice counts once.
fn merge_units<T: PartialEq>(units: &mut Vec<T>, more: Vec<T>) {
    if units.is_empty() || more.is_empty() {
        units.clear();
    } else {
        for unit in more {
            if !units.contains(&unit) {
                units.push(unit);
            }
        }
    }
}

/// The `/help` reply (Markdown), with commands spelled for the forge it is posted on.
pub fn help_text(spelling: &Spelling) -> String {
    let mut text = String::from(
        "### cascade commands\n\n\
         Post a command at the start of a line in a new comment. Commands inside code, \
         quotes or HTML comments are not read, and neither are edits to a comment; a command \
         repeated in one comment runs once.\n\n\
         | Command | What it does |\n\
         | --- | --- |\n",
    );
    for command in COMMANDS {
        text.push_str(&format!(
            "| `{}` | {} |\n",
            spelling.command(command.usage),
            respell(command.summary, spelling)
        ));
    }
    text
}

impl Command {
    /// The command as it is typed on the forge `spelling` is for: `/apply 3f9a2c1b7d4e`
    /// on GitHub, `cascade apply 3f9a2c1b7d4e` on GitLab.
    pub fn spelled(&self, spelling: &Spelling) -> String {
        let slashed = self.to_string();
        spelling.command(&slashed[1..])
    }
}

impl fmt::Display for Command {
    /// The command as it would be typed with a slash: `/plan live/dev/vpc`, `/apply 3f9a2c1b7d4e`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Command::Plan { units } => {
                f.write_str("/plan")?;
                units.iter().try_for_each(|unit| {
                    let unit = unit.as_str();
                    // `-x` would be read as an option; `./-x` names the same directory.
                    let dot = if unit.starts_with('-') { "./" } else { "" };
                    // Written plain, a final period would be read as punctuation and `<!--`
                    // would start a comment; in a code span both are part of the unit.
                    if without_final_period(unit) != unit || unit.contains("<!--") {
                        write!(f, " `{dot}{unit}`")
                    } else {
                        write!(f, " {dot}{unit}")
                    }
                })
            }
            Command::Apply { id, units } => {
                write!(f, "/apply {id}")?;
                units.iter().try_for_each(|unit| write!(f, " {unit}"))
            }
            Command::Destroy { units } => {
                f.write_str("/destroy")?;
                units.iter().try_for_each(|unit| write!(f, " {unit}"))
            }
            Command::ApprovePolicies { id } => write!(f, "/approve-policies {id}"),
            Command::ChangeState { unit, change } => match change {
                StateChange::Import { address, id } => write!(f, "/import {unit} {address} {id}"),
                StateChange::Remove { address } => write!(f, "/state rm {unit} {address}"),
            },
            Command::Unlock => f.write_str("/unlock"),
            Command::Help => f.write_str("/help"),
        }
    }
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// One command: the word after `/` (or `cascade `), how `/help` shows it (without the
/// prefix; `summary` with `/` spellings that [`respell`] adapts), and its parser, which
/// gets the arguments that follow the word.
struct CommandSpec {
    name: &'static str,
    usage: &'static str,
    summary: &'static str,
    parse: fn(&[&str]) -> Result<Command, Mistake>,
}

const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "plan",
        usage: "plan [unit …]",
        summary: "Re-plan every unit this PR affects, or only the named ones (paths from the \
                  repository root or globs, like `live/dev/vpc` or `live/prod/**`) and the \
                  units that depend on them. Needs the right to apply.",
        parse: parse_plan,
    },
    CommandSpec {
        name: "apply",
        usage: "apply <plan id> [unit …]",
        summary: "Apply exactly the plan with this id, as shown in the plan comment: \
                  `/apply 3f9a2c1b7d4e`; or only the units of it named (paths or globs, like \
                  `/apply 3f9a2c1b7d4e live/dev/**`) with every unit they depend on, the rest \
                  left to a new plan. Who may apply, and when, is set by the repository; \
                  cascade says why when it refuses.",
        parse: parse_apply,
    },
    CommandSpec {
        name: "destroy",
        usage: "destroy <unit …>",
        summary: "Plan a destroy of the named units (paths or globs, like \
                  `/destroy live/dev/app`), each before the units it depends on, with a plan \
                  id of its own; `/apply` with that id destroys them. Units that depend on a \
                  named one must be named too, and units `prevent_destroy` protects are \
                  refused. Needs the right to apply.",
        parse: destroy::parse_destroy,
    },
    CommandSpec {
        name: "approve-policies",
        usage: "approve-policies <plan id>",
        summary: "Approve, for exactly this plan id, the failures of the policy sets you own \
                  (`owners:` in `.cascade.yaml`), so `/apply` may go ahead. Not the PR's author; \
                  a new plan id needs a new approval.",
        parse: parse_approve_policies,
    },
    CommandSpec {
        name: "import",
        usage: "import <unit> <address> <id>",
        summary: "Import an existing object into one unit's terraform state, like `/import \
                  live/dev/vpc aws_vpc.main vpc-0abc123`, and discard this PR's plan. Off \
                  unless the default branch's `.cascade.yaml` lists it in `commands:`; needs \
                  the right to apply.",
        parse: state::parse_import,
    },
    CommandSpec {
        name: "state",
        usage: "state rm <unit> <address>",
        summary: "Remove a resource (or a whole module) from one unit's terraform state, \
                  like `/state rm live/dev/vpc aws_vpc.main`, and discard this PR's plan. \
                  Off unless the default branch's `.cascade.yaml` lists `state_rm` in \
                  `commands:`; needs the right to apply.",
        parse: state::parse_state,
    },
    CommandSpec {
        name: "unlock",
        usage: "unlock",
        summary: "Release this PR's locks and discard its plan; `/plan` plans again. Needs \
                  the right to apply.",
        parse: parse_unlock,
    },
    CommandSpec {
        name: "help",
        usage: "help",
        summary: "Show this list.",
        parse: parse_help,
    },
];

/// Characters that make a unit argument a pattern; units are named exactly.
const PATTERN_CHARS: &[char] = &['*', '?', '[', ']', '{', '}'];

/// The prefix of a command line as typed (`/`, or `cascade` in any case and one space or
/// tab) and the text after it; `None` for any other line.
fn command_prefix(line: &str) -> Option<(&str, &str)> {
    if line.starts_with('/') {
        return Some(line.split_at(1));
    }
    const WORD: &str = "cascade";
    let (word, rest) = line.split_at_checked(WORD.len())?;
    let after = rest.strip_prefix([' ', '\t'])?;
    word.eq_ignore_ascii_case(WORD)
        .then(|| line.split_at(line.len() - after.len()))
}

/// Parses one plain line (trimmed): None unless it starts with one of our command words.
/// Mistakes are worded with `spelling`, and a wrong case names what was typed.
fn parse_line(line: &str, spelling: &Spelling) -> Option<Parsed> {
    let (prefix, rest) = command_prefix(line)?;
    let separator = |c: char| c.is_whitespace() || c == ',';
    let word_end = rest.find(separator).unwrap_or(rest.len());
    let mut word = &rest[..word_end];
    let mut args: Vec<&str> = rest[word_end..]
        .split(separator)
        .filter(|arg| !arg.is_empty())
        .collect();
    // One period ending the line is punctuation; one inside a code span is part of the unit.
    if let Some(last) = args.last_mut() {
        *last = without_final_period(last);
    }
    args = args
        .into_iter()
        .map(without_code_span)
        .filter(|arg| !arg.is_empty())
        .collect();
    if args.is_empty() {
        word = without_final_period(word);
    }
    let spec = COMMANDS
        .iter()
        .find(|spec| spec.name.eq_ignore_ascii_case(word))?;
    let parsed = if spec.name == word {
        (spec.parse)(&args)
    } else {
        // Corrected in the spelling it was typed in: `/Plan` → `/plan`, `Cascade Plan` →
        // `cascade plan`.
        let meant_prefix = if prefix == "/" { "/" } else { "cascade " };
        Err(Mistake::WrongCase {
            wrote: format!("{prefix}{word}"),
            meant: format!("{meant_prefix}{}{}", spec.name, &rest[word_end..])
                .trim_end()
                .to_string(),
        })
    };
    Some(match parsed {
        Ok(command) => Parsed::Command(command),
        Err(mistake) => Parsed::Error(CommandError {
            line: line.to_string(),
            message: mistake.message(spelling),
        }),
    })
}

/// `` `abc` `` and ``` ``abc`` ``` → `abc`: a code span around a whole argument. A backtick
/// anywhere else stays, and is refused where it matters.
fn without_code_span(arg: &str) -> &str {
    let ticks = arg.len() - arg.trim_start_matches('`').len();
    let fence = &arg[..ticks];
    match arg[ticks..].strip_suffix(fence) {
        Some(inner) if ticks > 0 && !inner.ends_with('`') => inner,
        _ => arg,
    }
}

/// `abc.` → `abc`; `.` (the root unit) and `..` stay as they are.
fn without_final_period(arg: &str) -> &str {
    match arg.strip_suffix('.') {
        Some(stripped) if !stripped.is_empty() && !stripped.ends_with(['.', '/']) => stripped,
        _ => arg,
    }
}

/// `/plan [unit …]`: paths or globs.
fn parse_plan(args: &[&str]) -> Result<Command, Mistake> {
    args.iter().try_for_each(|arg| reject_flag("plan", arg))?;
    Ok(Command::Plan {
        units: unit_globs("plan", args)?,
    })
}

/// `/apply <id> [unit …]`: a second plan id is a mistake; any other argument is a glob
/// over the plan's units.
fn parse_apply(args: &[&str]) -> Result<Command, Mistake> {
    args.iter().try_for_each(|arg| reject_flag("apply", arg))?;
    let Some((first, rest)) = args.split_first() else {
        return Err(Mistake::MissingPlanId { command: "apply" });
    };
    if rest.iter().any(|arg| PlanId::parse(arg).is_ok()) {
        return Err(Mistake::TooManyPlanIds {
            command: "apply",
            ids: owned(args),
        });
    }
    let id = plan_id_argument("apply", &[first])?;
    let units = unit_globs("apply", rest)?;
    Ok(Command::Apply { id, units })
}

/// `/approve-policies <id>`
fn parse_approve_policies(args: &[&str]) -> Result<Command, Mistake> {
    plan_id_argument("approve-policies", args).map(|id| Command::ApprovePolicies { id })
}

/// The one plan id `command` takes.
fn plan_id_argument(command: &'static str, args: &[&str]) -> Result<PlanId, Mistake> {
    args.iter().try_for_each(|arg| reject_flag(command, arg))?;
    match args {
        [] => Err(Mistake::MissingPlanId { command }),
        [id] => PlanId::parse(id).map_err(|reason| Mistake::BadPlanId { command, reason }),
        ids => Err(Mistake::TooManyPlanIds {
            command,
            ids: owned(ids),
        }),
    }
}

/// `/unlock`
fn parse_unlock(args: &[&str]) -> Result<Command, Mistake> {
    no_arguments("unlock", args, Command::Unlock)
}

/// `/help`
fn parse_help(args: &[&str]) -> Result<Command, Mistake> {
    no_arguments("help", args, Command::Help)
}

fn no_arguments(command: &'static str, args: &[&str], parsed: Command) -> Result<Command, Mistake> {
    if args.is_empty() {
        Ok(parsed)
    } else {
        Err(Mistake::UnexpectedArguments {
            command,
            args: owned(args),
        })
    }
}

fn reject_flag(command: &'static str, arg: &str) -> Result<(), Mistake> {
    if arg.starts_with('-') {
        return Err(Mistake::UnknownFlag {
            command,
            flag: arg.to_string(),
        });
    }
    Ok(())
}

/// A unit argument of `command` as a path inside the repository (patterns allowed).
fn checked_path(command: &'static str, arg: &str) -> Result<UnitPath, Mistake> {
    let bad = |problem| {
        Err(Mistake::BadUnitPath {
            command,
            path: arg.to_string(),
            problem,
        })
    };
    let unit = UnitPath::new(arg);
    // Normalising can make a path absolute (`.//etc` is `/etc`), so both forms are checked.
    for path in [arg, unit.as_str()] {
        let bytes = path.as_bytes();
        if path.starts_with(['/', '\\'])
            || (bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':')
        {
            return bad(PathProblem::Absolute);
        }
        if path.split(['/', '\\']).any(|part| part == "..") {
            return bad(PathProblem::ParentDirectory);
        }
    }
    // Only a code span around the whole path is dropped; a backtick left inside is a typo,
    // and a unit named with one could not be shown back as it was read.
    if arg.contains('`') {
        return bad(PathProblem::Backtick);
    }
    Ok(unit)
}

fn owned(args: &[&str]) -> Vec<String> {
    args.iter().map(|arg| arg.to_string()).collect()
}

/// What is wrong with a line that starts with one of our commands.
#[derive(Debug)]
enum Mistake {
    WrongCase {
        wrote: String,
        meant: String,
    },
    UnexpectedArguments {
        command: &'static str,
        args: Vec<String>,
    },
    UnknownFlag {
        command: &'static str,
        flag: String,
    },
    MissingPlanId {
        command: &'static str,
    },
    TooManyPlanIds {
        command: &'static str,
        ids: Vec<String>,
    },
    /// Several `/apply` lines in one comment, with different ids.
    SeveralPlanIds {
        ids: Vec<String>,
    },
    /// `reason` is [`PlanId::parse`]'s explanation.
    BadPlanId {
        command: &'static str,
        reason: String,
    },
    BadUnitPath {
        command: &'static str,
        path: String,
        problem: PathProblem,
    },
    /// `/destroy` with no unit.
    NoUnitsNamed {
        command: &'static str,
    },
    /// A unit argument of `/apply` or `/destroy` globset cannot read; `problem` is its
    /// reason.
    BadUnitGlob {
        command: &'static str,
        glob: String,
        problem: String,
    },
    /// A mistake in `/import` or `/state rm`.
    State(state::StateMistake),
}

#[derive(Debug)]
enum PathProblem {
    Absolute,
    ParentDirectory,
    /// Only where a unit is named exactly (`/import`, `/state rm`).
    Pattern(char),
    Backtick,
}

impl Mistake {
    /// Every reply to a malformed command is worded here; each says what to post instead.
    fn message(&self, spelling: &Spelling) -> String {
        let cmd = |name: &str| spelling.command(name);
        match self {
            Mistake::WrongCase { wrote, meant } => format!(
                "Commands are lowercase: post {} in a new comment ({} is not read).",
                code(meant),
                code(wrote),
            ),
            Mistake::UnexpectedArguments { command, args } => format!(
                "`{0}` takes no arguments, but this line has {1}: post `{0}` \
                 on a line of its own in a new comment.",
                cmd(command),
                code_list(args),
            ),
            Mistake::UnknownFlag { command, flag } => {
                format!(
                    "`{}` has no option {}: {}.",
                    cmd(command),
                    code(flag),
                    how_to(command, spelling)
                )
            }
            Mistake::MissingPlanId { command } => format!(
                "`{0}` needs the plan id from the plan comment, like `{0} 3f9a2c1b7d4e`; \
                 post it in a new comment.",
                cmd(command),
            ),
            Mistake::TooManyPlanIds { command, ids } => format!(
                "`{}` takes one plan id, but this line has {} ({}): {}.",
                cmd(command),
                ids.len(),
                code_list(ids),
                how_to(command, spelling),
            ),
            Mistake::SeveralPlanIds { ids } => format!(
                "This comment applies {} different plan ids ({}), so none was applied: {}.",
                ids.len(),
                code_list(ids),
                how_to("apply", spelling),
            ),
            Mistake::BadPlanId { command, reason } => {
                format!(
                    "{reason}. Post the corrected `{}` line in a new comment.",
                    cmd(command)
                )
            }
            Mistake::State(mistake) => mistake.message(spelling),
            Mistake::BadUnitGlob {
                command,
                glob,
                problem,
            } => format!(
                "`{}` cannot use {}: it is not a valid glob ({}); use `*`, `**`, `?`, `[abc]` \
                 or `{{a,b}}`. {}.",
                cmd(command),
                code(glob),
                inert::text(problem),
                capitalised(&how_to(units_how(command), spelling))
            ),
            Mistake::NoUnitsNamed { command } => format!(
                "`{0}` needs the units to destroy, by their path from the repository root or a \
                 glob; a destroy of every unit must say so, as `{0} **`. {1}.",
                cmd(command),
                capitalised(&how_to(units_how(command), spelling))
            ),
            Mistake::BadUnitPath {
                command,
                path,
                problem,
            } => {
                let why = match problem {
                    PathProblem::Absolute => {
                        "it is an absolute path, and unit paths start at the repository root"
                            .to_string()
                    }
                    PathProblem::ParentDirectory => "unit paths cannot contain `..`".to_string(),
                    PathProblem::Pattern(ch) => format!(
                        "units are named exactly, and {} makes it a pattern",
                        code(&ch.to_string())
                    ),
                    PathProblem::Backtick => "a backtick is not part of a unit path (put the \
                                              whole path in one code span, like `live/dev/vpc`)"
                        .to_string(),
                };
                if *command == "import" || *command == "state rm" {
                    return format!(
                        "`{}` cannot use {}: {why}. {}.",
                        cmd(command),
                        code(path),
                        state::post(command, spelling)
                    );
                }
                let how = units_how(command);
                format!(
                    "`{}` cannot use {}: {why}. {}.",
                    cmd(command),
                    code(path),
                    capitalised(&how_to(how, spelling))
                )
            }
        }
    }
}

/// Which [`how_to`] answer a unit argument of `command` gets.
fn units_how(command: &str) -> &'static str {
    match command {
        "plan" => "plan",
        "destroy" => "destroy",
        _ => "apply units",
    }
}

/// What to post instead, for commands that take arguments.
fn how_to(command: &str, spelling: &Spelling) -> String {
    let text = match command {
        "plan" => {
            "post `/plan` to re-plan every unit this PR affects, or name units by their path \
             from the repository root or a glob, like `/plan live/dev/vpc live/prod/**`, in a \
             new comment"
        }
        "apply units" => {
            "post `/apply` with the plan id and the units to apply, by their path from the \
             repository root or a glob, like `/apply 3f9a2c1b7d4e live/dev/**`, in a new comment"
        }
        "destroy" => {
            "post `/destroy` with the units to destroy, by their path from the repository root \
             or a glob, like `/destroy live/dev/app live/dev/dns`, in a new comment"
        }
        "approve-policies" => {
            "post `/approve-policies` with the plan id from the latest plan comment, like \
              `/approve-policies 3f9a2c1b7d4e`, in a new comment"
        }
        _ => {
            "post `/apply` with the plan id from the latest plan comment, like \
              `/apply 3f9a2c1b7d4e`, in a new comment"
        }
    };
    respell(text, spelling)
}

/// `text`, written with `/` commands in code spans (`` `/plan` ``), with each command
/// spelled for `spelling`'s forge, and "PR" as that forge abbreviates a change request.
fn respell(text: &str, spelling: &Spelling) -> String {
    text.replace("`/", &format!("`{}", spelling.command_prefix))
        .replace(" PR", &format!(" {}", spelling.abbreviation()))
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// `text` as an inert code span, shortened when long (the reply quotes what a user typed).
fn code(text: &str) -> String {
    const MAX: usize = 60;
    if text.chars().count() > MAX {
        let shown: String = text.chars().take(MAX - 1).chain(['…']).collect();
        inert::code(&shown)
    } else {
        inert::code(text)
    }
}

/// Up to five arguments as code spans.
fn code_list(args: &[String]) -> String {
    const MAX: usize = 5;
    let mut list: Vec<String> = args.iter().take(MAX).map(|arg| code(arg)).collect();
    if args.len() > MAX {
        list.push(format!("and {} more", args.len() - MAX));
    }
    list.join(", ")
}
