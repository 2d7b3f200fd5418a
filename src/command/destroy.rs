//! `/destroy unit…` (`cascade destroy unit…`): what its arguments may be. Owns reading
//! the command (at least one unit, by path or glob, never an option); never knows which
//! units exist, which ones depend on them or which ones `.cascade.yaml` protects: the bot
//! decides that against the pull request's head and the default branch's rules.

use super::{Command, Mistake, reject_flag, unit_globs};

/// `/destroy unit…`: globs over the head's units, at least one (a destroy of everything
/// must say so, as `/destroy **`).
pub(super) fn parse_destroy(args: &[&str]) -> Result<Command, Mistake> {
    args.iter()
        .try_for_each(|arg| reject_flag("destroy", arg))?;
    if args.is_empty() {
        return Err(Mistake::NoUnitsNamed { command: "destroy" });
    }
    Ok(Command::Destroy {
        units: unit_globs("destroy", args)?,
    })
}

#[cfg(test)]
mod tests {
    use crate::command::{Command, Parsed, parse_comment, parse_comment_spelled, read_comment};
    use crate::forge::Spelling;

    fn destroyed(body: &str) -> Vec<String> {
        match parse_comment(body).as_slice() {
            [Parsed::Command(Command::Destroy { units })] => {
                units.iter().map(|u| u.to_string()).collect()
            }
            other => panic!("not one /destroy: {other:?}"),
        }
    }

    fn mistake(body: &str, spelling: &Spelling) -> String {
        match parse_comment_spelled(body, spelling).as_slice() {
            [Parsed::Error(e)] => e.message.clone(),
            other => panic!("not one mistake: {other:?}"),
        }
    }

    #[test]
    fn units_are_paths_or_globs_each_once_in_either_spelling() {
        assert_eq!(destroyed("/destroy dev/app"), ["dev/app"]);
        assert_eq!(
            destroyed("/destroy ./dev/app/, `dev/*` dev/app."),
            ["dev/app", "dev/*"]
        );
        assert_eq!(
            destroyed("cascade destroy prod/** global/dns"),
            ["prod/**", "global/dns"]
        );
        assert_eq!(destroyed("/destroy **"), ["**"]);
        assert_eq!(
            parse_comment("/destroy dev/app")[0],
            Parsed::Command(Command::Destroy {
                units: vec![crate::command::UnitGlob::new("dev/app").unwrap()]
            })
        );
    }

    #[test]
    fn a_destroy_names_at_least_one_unit() {
        insta::assert_snapshot!(mistake("/destroy", &Spelling::GITHUB), @"`/destroy` needs the units to destroy, by their path from the repository root or a glob; a destroy of every unit must say so, as `/destroy **`. Post `/destroy` with the units to destroy, by their path from the repository root or a glob, like `/destroy live/dev/app live/dev/dns`, in a new comment.");
        insta::assert_snapshot!(mistake("cascade destroy.", &Spelling::GITLAB), @"`cascade destroy` needs the units to destroy, by their path from the repository root or a glob; a destroy of every unit must say so, as `cascade destroy **`. Post `cascade destroy` with the units to destroy, by their path from the repository root or a glob, like `cascade destroy live/dev/app live/dev/dns`, in a new comment.");
    }

    #[test]
    fn options_parents_absolute_paths_and_bad_globs_are_mistakes() {
        insta::assert_snapshot!(mistake("/destroy -auto-approve dev/app", &Spelling::GITHUB), @"`/destroy` has no option `-auto-approve`: post `/destroy` with the units to destroy, by their path from the repository root or a glob, like `/destroy live/dev/app live/dev/dns`, in a new comment.");
        insta::assert_snapshot!(mistake("/destroy ../prod/app", &Spelling::GITHUB), @"`/destroy` cannot use `../prod/app`: unit paths cannot contain `..`. Post `/destroy` with the units to destroy, by their path from the repository root or a glob, like `/destroy live/dev/app live/dev/dns`, in a new comment.");
        insta::assert_snapshot!(mistake("/destroy /etc", &Spelling::GITLAB), @"`cascade destroy` cannot use `/etc`: it is an absolute path, and unit paths start at the repository root. Post `cascade destroy` with the units to destroy, by their path from the repository root or a glob, like `cascade destroy live/dev/app live/dev/dns`, in a new comment.");
        insta::assert_snapshot!(mistake("/destroy dev/[app", &Spelling::GITHUB), @r#"`/destroy` cannot use `dev/[app`: it is not a valid glob (unclosed character class; missing '\]'); use `*`, `**`, `?`, `[abc]` or `{a,b}`. Post `/destroy` with the units to destroy, by their path from the repository root or a glob, like `/destroy live/dev/app live/dev/dns`, in a new comment."#);
    }

    #[test]
    fn globs_repeated_over_lines_are_one_destroy() {
        let read = read_comment(
            "/destroy dev/app\n/destroy dev/dns dev/app",
            &Spelling::GITHUB,
        );
        assert_eq!(read.commands.len(), 1);
        assert_eq!(read.commands[0].to_string(), "/destroy dev/app dev/dns");
        assert_eq!(
            read.commands[0].spelled(&Spelling::GITLAB),
            "cascade destroy dev/app dev/dns"
        );
    }
}
