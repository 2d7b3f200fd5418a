//! Reading `/import <unit> <address> <id>` and `/state rm <unit> <address>`, and the
//! wording of their mistakes ([`StateMistake::message`]).
//!
//! The address and the id are checked here, as [`ResourceAddress`] and [`ImportId`]
//! read them: whatever passes can only be the one argument it is meant to be. Nothing
//! here decides whether the commands are on or who may run them.

use super::{Command, Mistake, checked_path, code, respell};
use crate::forge::Spelling;
use crate::unit::{AddressKind, ImportId, ResourceAddress, StateChange, UnitPath};

/// What is wrong with an `/import` or `/state` line.
#[derive(Debug)]
pub(super) enum StateMistake {
    /// Not the arguments the command takes; `args` as written.
    Arguments {
        command: &'static str,
        args: Vec<String>,
    },
    /// An argument that starts with `-`: the commands take no options.
    Option {
        command: &'static str,
        arg: String,
    },
    /// `/state` with no subcommand, or one cascade does not run.
    Subcommand {
        found: Option<String>,
    },
    BadAddress {
        command: &'static str,
        address: String,
        why: String,
    },
    /// `/import` of a data source or a whole module: nothing terraform imports.
    NotImportable {
        address: String,
        kind: AddressKind,
    },
    BadId {
        id: String,
        why: String,
    },
}

/// `/import <unit> <address> <id>`
pub(super) fn parse_import(args: &[&str]) -> Result<Command, Mistake> {
    const COMMAND: &str = "import";
    no_option(COMMAND, args)?;
    let [unit, address, id] = args else {
        return Err(arguments(COMMAND, args));
    };
    let unit = unit_argument(COMMAND, unit)?;
    let (address, kind) = address_argument(COMMAND, address)?;
    if kind != AddressKind::Managed {
        return Err(StateMistake::NotImportable {
            address: address.to_string(),
            kind,
        }
        .into());
    }
    let id = ImportId::parse(id).map_err(|why| StateMistake::BadId {
        id: id.to_string(),
        why,
    })?;
    Ok(Command::ChangeState {
        unit,
        change: StateChange::Import { address, id },
    })
}

/// `/state rm <unit> <address>`
pub(super) fn parse_state(args: &[&str]) -> Result<Command, Mistake> {
    const COMMAND: &str = "state rm";
    let Some((sub, rest)) = args.split_first() else {
        return Err(StateMistake::Subcommand { found: None }.into());
    };
    if *sub != "rm" {
        return Err(StateMistake::Subcommand {
            found: Some(sub.to_string()),
        }
        .into());
    }
    no_option(COMMAND, rest)?;
    let [unit, address] = rest else {
        return Err(arguments(COMMAND, rest));
    };
    let unit = unit_argument(COMMAND, unit)?;
    let (address, _) = address_argument(COMMAND, address)?;
    Ok(Command::ChangeState {
        unit,
        change: StateChange::Remove { address },
    })
}

fn no_option(command: &'static str, args: &[&str]) -> Result<(), Mistake> {
    match args.iter().find(|arg| arg.starts_with('-')) {
        Some(arg) => Err(StateMistake::Option {
            command,
            arg: arg.to_string(),
        }
        .into()),
        None => Ok(()),
    }
}

fn arguments(command: &'static str, args: &[&str]) -> Mistake {
    StateMistake::Arguments {
        command,
        args: args.iter().map(|a| a.to_string()).collect(),
    }
    .into()
}

/// The unit, named exactly as `/plan` names one.
fn unit_argument(command: &'static str, arg: &str) -> Result<UnitPath, Mistake> {
    let unit = checked_path(command, arg)?;
    if let Some(ch) = arg.chars().find(|c| super::PATTERN_CHARS.contains(c)) {
        return Err(Mistake::BadUnitPath {
            command,
            path: arg.to_string(),
            problem: super::PathProblem::Pattern(ch),
        });
    }
    Ok(unit)
}

fn address_argument(
    command: &'static str,
    arg: &str,
) -> Result<(ResourceAddress, AddressKind), Mistake> {
    ResourceAddress::parse(arg).map_err(|why| {
        StateMistake::BadAddress {
            command,
            address: arg.to_string(),
            why,
        }
        .into()
    })
}

impl From<StateMistake> for Mistake {
    fn from(mistake: StateMistake) -> Mistake {
        Mistake::State(mistake)
    }
}

/// What to post instead of a wrong `command` (`import`, `state rm`) line, spelled for
/// the forge: its usage, with an example.
pub(super) fn post(command: &str, spelling: &Spelling) -> String {
    let usage = if command == "import" {
        "`/import <unit> <address> <id>`, like `/import live/dev/vpc aws_vpc.main vpc-0abc123`,"
    } else {
        "`/state rm <unit> <address>`, like `/state rm live/dev/vpc aws_vpc.main`,"
    };
    respell(&format!("Post {usage} in a new comment"), spelling)
}

impl StateMistake {
    /// Every reply to a malformed `/import` or `/state` line; each says what to post.
    pub(super) fn message(&self, spelling: &Spelling) -> String {
        let cmd = |name: &str| spelling.command(name);
        let post = |command: &str| post(command, spelling);
        match self {
            StateMistake::Arguments { command, args } => format!(
                "`{}` takes a unit{} resource address{}, but this line has {}. {}.",
                cmd(command),
                if *command == "import" {
                    ", a"
                } else {
                    " and a"
                },
                if *command == "import" {
                    " and the id to import"
                } else {
                    ""
                },
                match args.len() {
                    0 => "none".to_string(),
                    n => format!("{n} ({})", super::code_list(args)),
                },
                post(command),
            ),
            StateMistake::Option { command, arg } => format!(
                "`{}` takes no options, and an address or id never starts with `-`: {} is \
                 refused. {}.",
                cmd(command),
                code(arg),
                post(command),
            ),
            StateMistake::Subcommand { found } => format!(
                "`{}` runs only `{}`{}. {}.",
                cmd("state"),
                cmd("state rm"),
                match found {
                    Some(found) => format!(", not {}", code(found)),
                    None => String::new(),
                },
                post("state rm"),
            ),
            StateMistake::BadAddress {
                command,
                address,
                why,
            } => format!(
                "`{}` cannot use {} as a resource address: {why}. {}.",
                cmd(command),
                code(address),
                post(command),
            ),
            StateMistake::NotImportable { address, kind } => format!(
                "`{}` cannot import {}: it names {}, and only a managed resource is imported. {}.",
                cmd("import"),
                code(address),
                match kind {
                    AddressKind::Data => "a data source",
                    _ => "a whole module",
                },
                post("import"),
            ),
            StateMistake::BadId { id, why } => format!(
                "`{}` cannot use {} as the id to import: {why}. {}.",
                cmd("import"),
                code(id),
                post("import"),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::show;

    fn gitlab(body: &str) -> String {
        super::super::parse_comment_spelled(body, &crate::forge::Spelling::GITLAB)
            .iter()
            .map(|parsed| match parsed {
                super::super::Parsed::Command(command) => {
                    command.spelled(&crate::forge::Spelling::GITLAB)
                }
                super::super::Parsed::Error(error) => format!("error: {}", error.message),
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    // /import

    #[test]
    fn import() {
        insta::assert_snapshot!(show("/import live/dev/vpc aws_vpc.main vpc-0abc123"), @"/import live/dev/vpc aws_vpc.main vpc-0abc123");
    }

    #[test]
    fn import_indexed_in_a_module_with_a_path_like_id() {
        insta::assert_snapshot!(show("/import ./live/dev/vpc/ module.net[\"a\"].aws_subnet.s[0] `arn:aws:iam::1:role/x`"), @r#"/import live/dev/vpc module.net["a"].aws_subnet.s[0] arn:aws:iam::1:role/x"#);
    }

    #[test]
    fn import_missing_arguments() {
        insta::assert_snapshot!(show("/import live/dev/vpc aws_vpc.main"), @"error on `/import live/dev/vpc aws_vpc.main`: `/import` takes a unit, a resource address and the id to import, but this line has 2 (`live/dev/vpc`, `aws_vpc.main`). Post `/import <unit> <address> <id>`, like `/import live/dev/vpc aws_vpc.main vpc-0abc123`, in a new comment.");
    }

    #[test]
    fn import_no_arguments() {
        insta::assert_snapshot!(show("/import"), @"error on `/import`: `/import` takes a unit, a resource address and the id to import, but this line has none. Post `/import <unit> <address> <id>`, like `/import live/dev/vpc aws_vpc.main vpc-0abc123`, in a new comment.");
    }

    #[test]
    fn import_extra_arguments() {
        insta::assert_snapshot!(show("/import live/dev/vpc aws_vpc.main vpc-1 vpc-2"), @"error on `/import live/dev/vpc aws_vpc.main vpc-1 vpc-2`: `/import` takes a unit, a resource address and the id to import, but this line has 4 (`live/dev/vpc`, `aws_vpc.main`, `vpc-1`, `vpc-2`). Post `/import <unit> <address> <id>`, like `/import live/dev/vpc aws_vpc.main vpc-0abc123`, in a new comment.");
    }

    #[test]
    fn import_option_injection() {
        insta::assert_snapshot!(show("/import live/dev/vpc -state=/etc/x aws_vpc.main vpc-1"), @"error on `/import live/dev/vpc -state=/etc/x aws_vpc.main vpc-1`: `/import` takes no options, and an address or id never starts with `-`: `-state=/etc/x` is refused. Post `/import <unit> <address> <id>`, like `/import live/dev/vpc aws_vpc.main vpc-0abc123`, in a new comment.");
    }

    #[test]
    fn import_option_as_id() {
        insta::assert_snapshot!(show("/import live/dev/vpc aws_vpc.main -lock=false"), @"error on `/import live/dev/vpc aws_vpc.main -lock=false`: `/import` takes no options, and an address or id never starts with `-`: `-lock=false` is refused. Post `/import <unit> <address> <id>`, like `/import live/dev/vpc aws_vpc.main vpc-0abc123`, in a new comment.");
    }

    #[test]
    fn import_bad_address() {
        insta::assert_snapshot!(show("/import live/dev/vpc aws_vpc vpc-1"), @"error on `/import live/dev/vpc aws_vpc vpc-1`: `/import` cannot use `aws_vpc` as a resource address: a resource address is `TYPE.NAME`, like `aws_vpc.main`. Post `/import <unit> <address> <id>`, like `/import live/dev/vpc aws_vpc.main vpc-0abc123`, in a new comment.");
    }

    #[test]
    fn import_address_with_a_mention_and_backticks() {
        insta::assert_snapshot!(show("/import live/dev/vpc @team.x`y` vpc-1"), @"error on `/import live/dev/vpc @team.x`y` vpc-1`: `/import` cannot use `` @team.x`y` `` as a resource address: it holds a backtick. Post `/import <unit> <address> <id>`, like `/import live/dev/vpc aws_vpc.main vpc-0abc123`, in a new comment.");
    }

    #[test]
    fn import_data_source() {
        insta::assert_snapshot!(show("/import live/dev/vpc data.aws_ami.ubuntu ami-1"), @"error on `/import live/dev/vpc data.aws_ami.ubuntu ami-1`: `/import` cannot import `data.aws_ami.ubuntu`: it names a data source, and only a managed resource is imported. Post `/import <unit> <address> <id>`, like `/import live/dev/vpc aws_vpc.main vpc-0abc123`, in a new comment.");
    }

    #[test]
    fn import_whole_module() {
        insta::assert_snapshot!(show("/import live/dev/vpc module.net ami-1"), @"error on `/import live/dev/vpc module.net ami-1`: `/import` cannot import `module.net`: it names a whole module, and only a managed resource is imported. Post `/import <unit> <address> <id>`, like `/import live/dev/vpc aws_vpc.main vpc-0abc123`, in a new comment.");
    }

    #[test]
    fn import_unit_outside_the_repository() {
        insta::assert_snapshot!(show("/import ../other aws_vpc.main vpc-1"), @"error on `/import ../other aws_vpc.main vpc-1`: `/import` cannot use `../other`: unit paths cannot contain `..`. Post `/import <unit> <address> <id>`, like `/import live/dev/vpc aws_vpc.main vpc-0abc123`, in a new comment.");
    }

    #[test]
    fn import_unit_pattern() {
        insta::assert_snapshot!(show("/import live/* aws_vpc.main vpc-1"), @"error on `/import live/* aws_vpc.main vpc-1`: `/import` cannot use `live/*`: units are named exactly, and `*` makes it a pattern. Post `/import <unit> <address> <id>`, like `/import live/dev/vpc aws_vpc.main vpc-0abc123`, in a new comment.");
    }

    // /state rm

    #[test]
    fn state_rm() {
        insta::assert_snapshot!(show("/state rm live/dev/vpc module.net[0].aws_subnet.s[\"b\"]"), @r#"/state rm live/dev/vpc module.net[0].aws_subnet.s["b"]"#);
    }

    #[test]
    fn state_rm_whole_module_with_period() {
        insta::assert_snapshot!(show("/state rm live/dev/vpc module.net."), @"/state rm live/dev/vpc module.net");
    }

    #[test]
    fn state_without_subcommand() {
        insta::assert_snapshot!(show("/state"), @"error on `/state`: `/state` runs only `/state rm`. Post `/state rm <unit> <address>`, like `/state rm live/dev/vpc aws_vpc.main`, in a new comment.");
    }

    #[test]
    fn state_other_subcommand() {
        insta::assert_snapshot!(show("/state mv live/dev/vpc a.b c.d"), @"error on `/state mv live/dev/vpc a.b c.d`: `/state` runs only `/state rm`, not `mv`. Post `/state rm <unit> <address>`, like `/state rm live/dev/vpc aws_vpc.main`, in a new comment.");
    }

    #[test]
    fn state_rm_missing_address() {
        insta::assert_snapshot!(show("/state rm live/dev/vpc"), @"error on `/state rm live/dev/vpc`: `/state rm` takes a unit and a resource address, but this line has 1 (`live/dev/vpc`). Post `/state rm <unit> <address>`, like `/state rm live/dev/vpc aws_vpc.main`, in a new comment.");
    }

    #[test]
    fn state_rm_extra_arguments() {
        insta::assert_snapshot!(show("/state rm live/dev/vpc a.b c.d"), @"error on `/state rm live/dev/vpc a.b c.d`: `/state rm` takes a unit and a resource address, but this line has 3 (`live/dev/vpc`, `a.b`, `c.d`). Post `/state rm <unit> <address>`, like `/state rm live/dev/vpc aws_vpc.main`, in a new comment.");
    }

    #[test]
    fn state_rm_option_injection() {
        insta::assert_snapshot!(show("/state rm live/dev/vpc -lock=false"), @"error on `/state rm live/dev/vpc -lock=false`: `/state rm` takes no options, and an address or id never starts with `-`: `-lock=false` is refused. Post `/state rm <unit> <address>`, like `/state rm live/dev/vpc aws_vpc.main`, in a new comment.");
    }

    #[test]
    fn state_rm_option_first() {
        insta::assert_snapshot!(show("/state rm -state=/etc/x live/dev/vpc a.b"), @"error on `/state rm -state=/etc/x live/dev/vpc a.b`: `/state rm` takes no options, and an address or id never starts with `-`: `-state=/etc/x` is refused. Post `/state rm <unit> <address>`, like `/state rm live/dev/vpc aws_vpc.main`, in a new comment.");
    }

    #[test]
    fn state_rm_shell_text() {
        insta::assert_snapshot!(show("/state rm live/dev/vpc a.b;rm$(id)"), @"error on `/state rm live/dev/vpc a.b;rm$(id)`: `/state rm` cannot use `a.b;rm$(id)` as a resource address: `;rm$(id)` does not follow a resource's name. Post `/state rm <unit> <address>`, like `/state rm live/dev/vpc aws_vpc.main`, in a new comment.");
    }

    #[test]
    fn state_rm_long_address() {
        let long = format!("/state rm live/dev/vpc a.{}", "b".repeat(600));
        insta::assert_snapshot!(show(&long).split(": ").last().unwrap(), @"it is longer than 512 bytes. Post `/state rm <unit> <address>`, like `/state rm live/dev/vpc aws_vpc.main`, in a new comment.");
    }

    #[test]
    fn state_rm_wrong_case() {
        insta::assert_snapshot!(show("/State rm live/dev/vpc a.b"), @"error on `/State rm live/dev/vpc a.b`: Commands are lowercase: post `/state rm live/dev/vpc a.b` in a new comment (`/State` is not read).");
    }

    // One comment: each different change runs, in order; the same one twice runs once.

    #[test]
    fn different_changes_in_one_comment_each_run() {
        let read = super::super::read_comment(
            "/state rm a b.c\n/import a b.c id\n/state rm a b.c\n/state rm a b.d",
            &crate::forge::Spelling::GITHUB,
        );
        let lines: Vec<String> = read.commands.iter().map(|c| c.to_string()).collect();
        insta::assert_snapshot!(lines.join("\n"), @r"
        /state rm a b.c
        /import a b.c id
        /state rm a b.d
        ");
    }

    // Both spellings on GitLab.

    #[test]
    fn gitlab_spellings() {
        insta::assert_snapshot!(gitlab("cascade state rm live/dev/vpc a.b\ncascade import live/dev/vpc a.b id-1\ncascade state rm live/dev/vpc"), @r"
        cascade state rm live/dev/vpc a.b
        cascade import live/dev/vpc a.b id-1
        error: `cascade state rm` takes a unit and a resource address, but this line has 1 (`live/dev/vpc`). Post `cascade state rm <unit> <address>`, like `cascade state rm live/dev/vpc aws_vpc.main`, in a new comment.
        ");
    }
}
