//! What each fuzz target feeds cascade, and what it checks beyond "does not panic".
//!
//! One function per target in `fuzz_targets/`, each taking the fuzzer's bytes. The same
//! functions replay the committed corpora and regressions under stable `cargo test`
//! (`tests/fuzz_replay.rs` compiles this file with `#[path]`), so an input the fuzzer once
//! broke cascade with stays fixed without nightly. For that reason this file uses only
//! crates cascade depends on, and never anything from the fuzzer itself.
//!
//! Each target writes nothing outside its own temporary directory and reads nothing but
//! what it wrote: inputs are hostile, like the pull requests they stand in for.

use cascade::command::{Command, Parsed, parse_comment};
use cascade::config::RepoConfig;
use cascade::event::gitlab::{GitLabDelivery, SigningKey, verify_signing, verify_token};
use cascade::event::{self, Delivery, parse_gitlab_event, verify_signature};
use cascade::forge::Spelling;
use cascade::problem::Problem;
use cascade::terragrunt::parse::HclFile;
use cascade::terragrunt::{DiscoverOptions, discover};
use cascade::unit::UnitPath;
use hmac::{Hmac, Mac};
use secrecy::SecretSlice;
use sha2::Sha256;
use std::collections::BTreeMap;
use std::path::Path;

/// Separates the files of one `hcl_discover` input: a line of its own, so every part stays
/// a valid HCL comment-separated file when the fuzzer leaves it alone.
pub const HCL_FILE_SEPARATOR: &str = "\n#---\n";

/// Where the parts of an `hcl_discover` input are written, in order (extra parts are
/// dropped). The layout is the one of `examples/live`, so seeds taken from it resolve their
/// includes, parent-folder lookups, dependencies and module sources. The paths are fixed:
/// the fuzzer picks contents, never names, so nothing is written outside the temporary
/// directory.
pub const HCL_FILES: &[&str] = &[
    "dev/app/terragrunt.hcl",
    "root.hcl",
    "_envcommon/app.hcl",
    "dev/env.hcl",
    "dev/account.hcl",
    "dev/database/terragrunt.hcl",
    "dev/network/terragrunt.hcl",
    "modules/service/main.tf",
    "terragrunt.hcl",
];

/// Every event name `cascade::event::parse_event` treats specially, plus one it ignores.
pub const WEBHOOK_EVENTS: &[&str] = &[
    "ping",
    "pull_request",
    "issue_comment",
    "installation",
    "installation_repositories",
    "check_run",
];

/// Every `X-Gitlab-Event` `cascade::event::parse_gitlab_event` reads, plus one it ignores.
pub const GITLAB_HOOKS: &[&str] = &[
    "Merge Request Hook",
    "Note Hook",
    "Confidential Note Hook",
    "Push Hook",
];

/// The signing token the `webhook` target signs GitLab bodies with.
const GITLAB_SIGNING_TOKEN: &str = "whsec_ZnV6ei13ZWJob29rLXNpZ25pbmcta2V5LTMyYnl0ZXM=";

/// The secret the `webhook` target signs bodies with.
const WEBHOOK_SECRET: &[u8] = b"fuzz-webhook-secret";

/// The longest message a parser may produce about one input: messages end up in pull
/// request comments, so a long input must not make a long reply.
const MAX_MESSAGE_CHARS: usize = 2_000;

/// `hcl_discover`: the input, split on [`HCL_FILE_SEPARATOR`], is written to the files of
/// [`HCL_FILES`] in a fresh directory; each part is parsed with `HclFile::parse`, then the
/// directory is discovered with the default configuration.
///
/// Checks: no panic; unit paths and dependencies are repository-relative and stay inside it;
/// no problem quotes the server's absolute path of the checkout.
pub fn hcl_discover(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let parts: Vec<&str> = text.split(HCL_FILE_SEPARATOR).collect();
    for (part, name) in parts.iter().zip(HCL_FILES) {
        if let Err(err) = HclFile::parse(name, part) {
            assert_message_bounded(&err.message);
        }
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (part, name) in parts.iter().zip(HCL_FILES) {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().expect("every name has a parent"))
            .expect("create a directory in the temporary directory");
        std::fs::write(&path, part).expect("write a file in the temporary directory");
    }
    let discovery = discover(&DiscoverOptions {
        dir: dir.path().to_path_buf(),
        repo_root: dir.path().to_path_buf(),
        config: RepoConfig::default(),
        env: BTreeMap::new(),
        features: BTreeMap::new(),
        // No deadline: the evaluator's own bounds must stop every input.
        deadline: None,
        sources: Default::default(),
    });
    for unit in &discovery.units {
        assert_inside_repository(&unit.path);
        unit.dependencies.iter().for_each(assert_inside_repository);
    }
    for problem in &discovery.problems {
        assert_no_server_path(problem, dir.path());
    }
    let (_graph, cycles) = discovery.graph();
    for problem in &cycles {
        assert_no_server_path(problem, dir.path());
    }
}

/// `cascade_yaml`: the input as the text of `.cascade.yaml`.
///
/// Checks: no panic; an error's message is bounded; an accepted configuration names only
/// paths inside the repository, and answering questions about it does not panic.
pub fn cascade_yaml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return; // `RepoConfig::load` refuses a file that is not UTF-8 before parsing.
    };
    let config = match RepoConfig::parse(text) {
        Ok(config) => config,
        Err(problem) => {
            assert_message_bounded(&problem.message);
            return;
        }
    };
    let mut named: Vec<UnitPath> = Vec::new();
    named.extend(
        config
            .environments
            .iter()
            .map(|env| UnitPath::new(&env.path)),
    );
    for (unit, deps) in &config.implicit_deps {
        named.push(unit.clone());
        named.extend(deps.iter().cloned());
    }
    for module in &config.modules {
        named.push(module.path.clone());
        named.extend(module.depends_on.iter().cloned());
    }
    for unit in &named {
        assert_inside_repository(unit);
        let _ = config.environment_of(unit);
        let _ = config.executor_for(unit);
        let _ = config.outside_environments(unit);
        let _ = config.is_ignored(unit.as_str());
        let _ = config.is_ignored(&format!("{unit}/main.tf"));
    }
}

/// `command`: the input as the body of a pull request comment.
///
/// Checks: no panic; every command read back from its own text, in either spelling, is the
/// same command (what the bot acts on is what it would show); `/plan` units stay inside the
/// repository; replies are bounded; nothing inside a fenced code block or a block quote is read.
pub fn command(data: &[u8]) {
    let body = String::from_utf8_lossy(data);
    for parsed in parse_comment(&body) {
        match parsed {
            Parsed::Command(command) => {
                if let Command::Plan { units } = &command {
                    units
                        .iter()
                        .for_each(|unit| assert_inside_repository(&UnitPath::new(unit.as_str())));
                }
                // Both spellings: `/apply …` as GitHub shows it, `cascade apply …` as GitLab does.
                for typed in [command.to_string(), command.spelled(&Spelling::GITLAB)] {
                    assert_eq!(
                        parse_comment(&typed),
                        vec![Parsed::Command(command.clone())],
                        "{typed:?} does not read back as the command it shows",
                    );
                }
            }
            Parsed::Error(error) => assert_message_bounded(&error.message),
        }
    }
    // A fence longer than any tilde run in the body is never closed inside it.
    let longest_tildes = body.split(|c| c != '~').map(str::len).max().unwrap_or(0);
    let fence = "~".repeat(longest_tildes.max(2) + 1);
    let fenced = format!("{fence}\n{body}\n{fence}");
    assert_eq!(
        parse_comment(&fenced),
        vec![],
        "read a command inside a fence"
    );
    // Every line as Markdown splits them: a lone `\r` ends one too.
    let quoted: String = body
        .split(['\n', '\r'])
        .map(|line| format!("> {line}\n"))
        .collect();
    assert_eq!(
        parse_comment(&quoted),
        vec![],
        "read a command inside a quote"
    );
}

/// `webhook`: the input as the body of a delivery of each event in [`WEBHOOK_EVENTS`] and
/// each GitLab hook in [`GITLAB_HOOKS`], and its lines as `Name: value` headers.
///
/// Checks: no panic; a body signed with the configured secret (GitHub) or signing token
/// (GitLab) is accepted and the header parsers survive any value (the first line of the
/// input is also tried as the signature and as the token); a parse error's message is
/// bounded.
pub fn webhook(data: &[u8]) {
    for name in WEBHOOK_EVENTS {
        let _ = event::parse_event(name, data);
    }
    for hook in GITLAB_HOOKS {
        if let Err(error) = parse_gitlab_event(hook, data) {
            assert_message_bounded(&error.to_string());
        }
    }
    let text = String::from_utf8_lossy(data);
    let headers: Vec<(&str, &str)> = text
        .lines()
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim(), value.trim()))
        .collect();
    let _ = Delivery::from_headers(headers.iter().copied());
    let _ = event::header(headers.iter().copied(), event::SIGNATURE_HEADER);

    let secrets = [
        SecretSlice::from(Vec::new()),
        SecretSlice::from(WEBHOOK_SECRET.to_vec()),
    ];
    let mut mac = Hmac::<Sha256>::new_from_slice(WEBHOOK_SECRET).expect("HMAC takes any key");
    mac.update(data);
    let signed = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    assert_eq!(verify_signature(&secrets, Some(&signed), data), Ok(()));
    let first_line = text.lines().next().unwrap_or_default();
    if first_line != signed {
        assert!(verify_signature(&secrets, Some(first_line), data).is_err());
    }

    let key = SigningKey::parse(GITLAB_SIGNING_TOKEN).expect("a valid signing token");
    let _ = GitLabDelivery::from_headers(headers.iter().copied());
    let _ = verify_signing(&key, headers.iter().copied(), data, 0);
    let token = String::from_utf8_lossy(WEBHOOK_SECRET);
    assert_eq!(verify_token(&secrets, Some(&token)), Ok(()));
    if first_line != token {
        assert!(verify_token(&secrets, Some(first_line)).is_err());
    }
    let id = "fuzz-delivery";
    let at = 1_700_000_000;
    let gitlab_signed = key.sign(id, at, data);
    let gitlab_headers = [
        ("webhook-id", id),
        ("webhook-timestamp", "1700000000"),
        ("webhook-signature", gitlab_signed.as_str()),
    ];
    assert_eq!(verify_signing(&key, gitlab_headers, data, at), Ok(()));
    if first_line != gitlab_signed {
        let forged = [
            gitlab_headers[0],
            gitlab_headers[1],
            ("webhook-signature", first_line),
        ];
        assert!(verify_signing(&key, forged, data, at).is_err());
    }
}

/// `inert_markdown`: the input as a workflow step's Markdown output (`format: markdown`),
/// shown within a step's usual limit and within a small one that forces a cut.
///
/// Checks: no panic; the result fits its limit; it holds no control character but newlines
/// and tabs, and no zero-width or bidi character but cascade's word joiner; and written
/// again with a paragraph after it, that paragraph stays a paragraph at the top level, so
/// nothing the result opened (a fence, a list, a quote) swallows what follows it in a
/// comment. (The unit tests in `src/inert/markdown/` re-read results with pulldown-cmark;
/// this lib may use only what cascade offers, so it re-reads them through cascade.)
pub fn inert_markdown(data: &[u8]) {
    let raw = String::from_utf8_lossy(data);
    for limit in [8 * 1024, 300] {
        let out = cascade::inert::markdown(&raw, limit);
        assert!(out.len() <= limit, "{} bytes past {limit}", out.len());
        let hidden = out.chars().find(|&c| {
            (c.is_control() && c != '\n' && c != '\t')
                || matches!(
                    c,
                    '\u{200B}'..='\u{200F}'
                        | '\u{202A}'..='\u{202E}'
                        | '\u{2066}'..='\u{2069}'
                        | '\u{FEFF}'
                )
        });
        assert!(hidden.is_none(), "{hidden:?} in:\n{out}");
        let again = cascade::inert::markdown(&format!("{out}\n\nSENTINEL"), usize::MAX);
        assert!(
            again == "SENTINEL" || again.ends_with("\n\nSENTINEL"),
            "a paragraph after the result is swallowed:\n{out}\n---\n{again}",
        );
    }
}

/// Every file in `dir` that is an input (not a note), sorted, for replaying.
pub fn inputs_in(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut inputs: Vec<_> = entries
        .map(|entry| entry.expect("a readable directory entry").path())
        .filter(|path| path.is_file() && path.extension().is_none_or(|ext| ext != "md"))
        .collect();
    inputs.sort();
    inputs
}

fn assert_inside_repository(unit: &UnitPath) {
    let path = unit.as_str();
    assert!(
        !path.starts_with('/') && !path.split('/').any(|part| part == ".."),
        "unit path {path:?} leaves the repository",
    );
}

fn assert_no_server_path(problem: &Problem, root: &Path) {
    let root = root.to_string_lossy();
    let shown = problem.to_string();
    assert!(
        !shown.contains(root.as_ref()),
        "a problem shows the checkout's absolute path: {shown}",
    );
}

fn assert_message_bounded(message: &str) {
    let chars = message.chars().count();
    assert!(
        chars <= MAX_MESSAGE_CHARS,
        "a message of {chars} characters: {}…",
        message.chars().take(200).collect::<String>(),
    );
}
