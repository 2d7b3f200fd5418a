//! What a pull request is told when `.cascade.yaml` on the default branch (where its
//! rules are read) is invalid: the comment names the file, line and column and links that
//! line at the commit read; the check says the plan could not run because of it. Never
//! decides whether to plan.
//!
//! The problem's message may quote the file's keys and values (shortened by `config`),
//! which whoever can push to the default branch wrote: it goes in a code block no line of
//! it can close.

use crate::forge::{CheckOutput, CheckStatus, ForgeKind};
use crate::inert::{code, fenced};
use crate::problem::Problem;

/// Where an invalid `.cascade.yaml` was read: the branch, its commit and the repository's
/// web page (from the forge), for the link.
pub struct ReadAt<'a> {
    pub branch: &'a str,
    pub sha: &'a str,
    pub web_url: Option<&'a str>,
}

/// The check and the comment body for `problem` in the configuration read at `at`, on
/// a forge of `kind`.
pub fn invalid_config(
    problem: &Problem,
    at: &ReadAt<'_>,
    kind: ForgeKind,
) -> (CheckOutput, String) {
    let spelling = kind.spelling();
    let file = problem.file.as_deref().unwrap_or(crate::config::FILE_NAME);
    let place = match (problem.line, problem.column) {
        (Some(line), Some(column)) => format!("`{file}` line {line}, column {column}"),
        (Some(line), None) => format!("`{file}` line {line}"),
        _ => format!("`{file}`"),
    };
    let short_base: String = at.sha.chars().take(7).collect();
    let branch = code(at.branch);
    let link = at
        .web_url
        .and_then(|web| kind.file_url(web, at.sha, file, problem.line))
        .map(|url| format!(" ([see it at `{short_base}`](<{url}>))"))
        .unwrap_or_default();
    let block = fenced(problem.to_string().trim_end(), "");
    let next = format!(
        "Fix it on {branch}, then comment `{}`.",
        spelling.command("plan")
    );
    let body = format!(
        "`{file}` on {branch}, the default branch, is invalid at {place}{link}, so nothing was planned:\n\n{block}\n\n{next}"
    );
    let summary = format!(
        "The plan could not run: `{file}` on the default branch {branch} (`{short_base}`) is invalid at {place}{link}.\n\n{block}\n\n{next}"
    );
    let title = format!("cascade: {file} is invalid");
    (CheckOutput::new(CheckStatus::Failure, title, summary), body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::ProblemKind;

    fn pr(web_url: Option<&str>) -> ReadAt<'_> {
        ReadAt {
            branch: "main",
            sha: "0123456789abcdef0123456789abcdef01234567",
            web_url,
        }
    }

    fn problem(message: &str) -> Problem {
        Problem::new(ProblemKind::Config, message).at(".cascade.yaml", Some(3), Some(2))
    }

    #[test]
    fn the_comment_and_check_locate_the_problem_and_link_the_line() {
        let (check, body) = invalid_config(
            &problem("unknown key `x`"),
            &pr(Some("https://github.com/acme/infra")),
            ForgeKind::GitHub,
        );
        let link = "https://github.com/acme/infra/blob/0123456789abcdef0123456789abcdef01234567/.cascade.yaml#L3";
        for text in [&body, &check.summary] {
            assert!(text.contains("line 3, column 2"), "{text}");
            assert!(text.contains(&format!("(<{link}>)")), "{text}");
            assert!(
                text.contains(".cascade.yaml:3:2: unknown key `x`"),
                "{text}"
            );
            assert!(text.contains("comment `/plan`"), "{text}");
        }
        assert!(
            check.summary.starts_with("The plan could not run"),
            "{}",
            check.summary
        );
        assert_eq!(check.title, "cascade: .cascade.yaml is invalid");
        assert_eq!(check.status, CheckStatus::Failure);
        let (_, gitlab) = invalid_config(
            &problem("m"),
            &pr(Some("https://gitlab.example.com/g/p")),
            ForgeKind::GitLab,
        );
        assert!(gitlab.contains("https://gitlab.example.com/g/p/-/blob/0123456789abcdef0123456789abcdef01234567/.cascade.yaml#L3"), "{gitlab}");
        assert!(gitlab.contains("comment `cascade plan`"), "{gitlab}");
    }

    #[test]
    fn without_a_web_url_there_is_no_link_and_fences_in_the_message_stay_inside() {
        let (_, body) = invalid_config(&problem("key ```\n# out"), &pr(None), ForgeKind::GitHub);
        assert!(!body.contains("http"), "{body}");
        assert!(body.contains("````\n.cascade.yaml:3:2: key ```"), "{body}");
    }
}
