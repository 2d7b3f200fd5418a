//! The wording of the refusals of `/import` and `/state rm`: off in this repository,
//! from a fork, a unit the head does not have, a unit another change request holds, or
//! asked on the drift issue. Part of `refusal`, the one place that words what cascade
//! refuses; the unit and the command as typed are placed with `inert`.

use super::Refusal;
use crate::config::OptInCommand;
use crate::forge::Spelling;
use crate::inert::code;
use crate::unit::UnitPath;

/// Why a hand-made state change is not made, with its facts.
#[derive(Debug)]
pub enum StateRefusal {
    /// `command` is not listed in `commands:` of the default branch's `.cascade.yaml`
    /// (which lists `listed`).
    Off {
        command: OptInCommand,
        branch: String,
        listed: Vec<OptInCommand>,
    },
    /// A change request from a fork changes no state.
    Fork,
    /// `unit` is no unit at the change request's head.
    UnknownUnit { command: String, unit: UnitPath },
    /// The unit is locked by another change request.
    Locked { unit: UnitPath, holder: u64 },
    /// On the drift issue, which has no checkout to run it in.
    OnDriftIssue,
}

impl From<StateRefusal> for Refusal {
    fn from(refusal: StateRefusal) -> Refusal {
        Refusal::State(refusal)
    }
}

/// How the command is typed, without its arguments: `/import`, `/state rm`.
fn typed(command: OptInCommand, spelling: &Spelling) -> String {
    spelling.command(match command {
        OptInCommand::Import => "import",
        OptInCommand::StateRm => "state rm",
    })
}

impl StateRefusal {
    pub fn message(&self, spelling: &Spelling) -> String {
        let cr = spelling.change_request;
        match self {
            StateRefusal::Off {
                command,
                branch,
                listed,
            } => {
                let mut words: Vec<&str> = listed.iter().map(|c| c.word()).collect();
                words.push(command.word());
                format!(
                    "`{}` is off in this repository: it changes terraform state without a \
                     reviewed plan. To turn it on, set this line in `.cascade.yaml` on {} (the \
                     default branch; a {cr} cannot turn it on for itself):\n\n```yaml\n\
                     commands: [{}]\n```",
                    typed(*command, spelling),
                    code(branch),
                    words.join(", "),
                )
            }
            StateRefusal::Fork => format!(
                "cascade does not change state for {cr}s from forks: the command runs the \
                 {cr}'s code with this server's credentials. Push the branch to this repository \
                 and open a {cr} from it."
            ),
            StateRefusal::UnknownUnit { command, unit } => format!(
                "Nothing was changed: {} is not a unit at this {cr}'s head. Name the unit by \
                 its path from the repository root, as the plan comment lists it, in {}.",
                code(unit.as_str()),
                code(command),
            ),
            StateRefusal::Locked { unit, holder } => format!(
                "Nothing was changed: {} is locked by {}{holder}. Merge or close that {cr}, \
                 or comment `{}` there, then try again.",
                code(unit.as_str()),
                spelling.ref_sigil,
                spelling.command("unlock"),
            ),
            StateRefusal::OnDriftIssue => format!(
                "`{}` and `{}` run on a {cr}, in its checkout: comment there.",
                spelling.command("import"),
                spelling.command("state rm"),
            ),
        }
    }
}
