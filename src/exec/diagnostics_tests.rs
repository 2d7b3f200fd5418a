//! The reason read from terraform 1.11's real output (captured with `-no-color`, as cascade
//! runs it, and boxed, as it prints a diagnostic before it reads its flags).

use super::*;

fn reason(output: &str) -> Option<String> {
    let mut blocks = ErrorBlocks::default();
    for line in output.lines() {
        blocks.line(line);
    }
    blocks.reason()
}

/// The CLI-configuration warning terraform prints (boxed) before anything else.
const CLI_WARNING: &str = "There are some problems with the CLI configuration:
╷
│ Warning: Unable to open CLI configuration file
│
│ The CLI configuration file at \"/root/.terraformrc\" does not exist.
╵
";

#[test]
fn a_syntax_error_in_init_is_named_past_the_init_preamble() {
    let out = format!(
        "{CLI_WARNING}
Initializing the backend...

Error: Terraform encountered problems during initialisation, including problems
with the configuration, described below.

The Terraform configuration must be valid before initialization so that
Terraform can determine which modules and providers need to be installed.


Error: Unclosed configuration block

  on main.tf line 1, in resource \"terraform_data\" \"a\":
   1: resource \"terraform_data\" \"a\" {{

There is no closing brace for this block before the end of the file. This may
be caused by incorrect brace nesting elsewhere in this file.
"
    );
    let got = reason(&out).unwrap();
    assert_eq!(
        got.lines().next().unwrap(),
        "Error: Unclosed configuration block (main.tf line 1)"
    );
    assert_eq!(
        got,
        "Error: Unclosed configuration block (main.tf line 1)

Error: Terraform encountered problems during initialisation, including problems
with the configuration, described below.

The Terraform configuration must be valid before initialization so that
Terraform can determine which modules and providers need to be installed.

Error: Unclosed configuration block

  on main.tf line 1, in resource \"terraform_data\" \"a\":
   1: resource \"terraform_data\" \"a\" {

There is no closing brace for this block before the end of the file. This may
be caused by incorrect brace nesting elsewhere in this file."
    );
    assert!(!got.contains("Warning"), "{got}");
    assert!(!got.contains("Initializing"), "{got}");
}

#[test]
fn several_errors_the_first_in_the_line_all_in_the_detail() {
    let out = format!(
        "{CLI_WARNING}

Error: Reference to undeclared input variable

  on main.tf line 2, in resource \"terraform_data\" \"a\":
   2:   input = var.nope

An input variable with the name \"nope\" has not been declared. This variable
can be declared with a variable \"nope\" {{}} block.

Error: Reference to undeclared local value

  on main.tf line 5, in resource \"terraform_data\" \"b\":
   5:   input = local.missing

A local value with the name \"missing\" has not been declared.
"
    );
    let got = reason(&out).unwrap();
    let mut lines = got.lines();
    assert_eq!(
        lines.next().unwrap(),
        "Error: Reference to undeclared input variable (main.tf line 2)"
    );
    assert!(
        got.contains("Error: Reference to undeclared local value\n\n  on main.tf line 5"),
        "{got}"
    );
    assert!(
        got.ends_with("A local value with the name \"missing\" has not been declared."),
        "{got}"
    );
}

#[test]
fn a_failing_provisioner_at_apply() {
    let out = format!(
        "{CLI_WARNING}
terraform_data.a: Creating...
terraform_data.a: Provisioning with 'local-exec'...
terraform_data.a (local-exec): Executing: [\"/bin/sh\" \"-c\" \"exit 1\"]

Error: local-exec provisioner error

  with terraform_data.a,
  on main.tf line 3, in resource \"terraform_data\" \"a\":
   3:   provisioner \"local-exec\" {{

Error running command 'exit 1': exit status 1. Output: 
"
    );
    let got = reason(&out).unwrap();
    assert_eq!(
        got.lines().next().unwrap(),
        "Error: local-exec provisioner error (main.tf line 3)"
    );
    assert!(
        got.ends_with("Error running command 'exit 1': exit status 1. Output:"),
        "{got}"
    );
    assert!(!got.contains("Creating..."), "{got}");
}

#[test]
fn a_validation_message_a_pull_request_wrote_is_detail_not_headline() {
    let out = format!(
        "{CLI_WARNING}

Planning failed. Terraform encountered an error while generating this plan.


Error: Invalid value for variable

  on main.tf line 1:
   1: variable \"name\" {{
    ├────────────────
    │ var.name is \"bad name\"

The name must be lowercase letters only; got something else. Also
[redacted] here.

This was checked by the validation rule at main.tf:4,3-13.
"
    );
    let got = reason(&out).unwrap();
    assert_eq!(
        got.lines().next().unwrap(),
        "Error: Invalid value for variable (main.tf line 1)"
    );
    assert!(got.contains("    │ var.name is \"bad name\""), "{got}");
    assert!(
        got.contains("This was checked by the validation rule"),
        "{got}"
    );
    assert!(!got.contains("Planning failed"), "{got}");
}

#[test]
fn boxed_and_coloured_errors_read_like_plain_ones() {
    let out = "\u{1b}[31m╷\u{1b}[0m\u{1b}[0m
\u{1b}[31m│\u{1b}[0m \u{1b}[0m\u{1b}[1m\u{1b}[31mError: \u{1b}[0m\u{1b}[0m\u{1b}[1mReference to undeclared input variable\u{1b}[0m
\u{1b}[31m│\u{1b}[0m \u{1b}[0m
\u{1b}[31m│\u{1b}[0m \u{1b}[0m\u{1b}[0m  on main.tf line 2, in resource \"terraform_data\" \"a\":
\u{1b}[31m│\u{1b}[0m \u{1b}[0m   2:   input = \u{1b}[4mvar.nope\u{1b}[0m\u{1b}[0m
\u{1b}[31m│\u{1b}[0m \u{1b}[0m
\u{1b}[31m│\u{1b}[0m \u{1b}[0mAn input variable with the name \"nope\" has not been declared.
\u{1b}[31m╵\u{1b}[0m\u{1b}[0m
Releasing state lock. This may take a few moments...
";
    let got = reason(out).unwrap();
    assert_eq!(
        got,
        "Error: Reference to undeclared input variable (main.tf line 2)

Error: Reference to undeclared input variable

  on main.tf line 2, in resource \"terraform_data\" \"a\":
   2:   input = var.nope

An input variable with the name \"nope\" has not been declared."
    );
}

#[test]
fn an_error_without_a_location_and_a_bare_one() {
    let got = reason(
        "Initializing the backend...

Error: validating provider credentials: retrieving caller identity from STS: operation error STS: GetCallerIdentity, https response error StatusCode: 403, RequestID: 1, api error AccessDenied: denied
",
    )
    .unwrap();
    assert!(
        got.starts_with(
            "Error: validating provider credentials: retrieving caller identity from STS"
        ),
        "{got}"
    );
    assert!(got.contains("AccessDenied"), "{got}");
    assert_eq!(reason("Error: boom").unwrap(), "Error: boom");
}

#[test]
fn warnings_and_plain_output_give_no_reason() {
    assert_eq!(reason(CLI_WARNING), None);
    assert_eq!(
        reason("Initializing the backend...\nsomething broke\n"),
        None
    );
    assert_eq!(
        reason("\nWarning: Deprecated attribute\n\n  on main.tf line 3:\n\nUse x instead.\n"),
        None
    );
}

#[test]
fn blocks_lines_and_the_summary_are_bounded() {
    let mut out = String::new();
    for i in 0..8 {
        out.push_str(&format!("\nError: failure {i}\n\n"));
        for j in 0..100 {
            out.push_str(&format!("noise {j} {}\n", "x".repeat(1_000)));
        }
    }
    let got = reason(&out).unwrap();
    assert_eq!(got.lines().next().unwrap(), "Error: failure 0");
    assert_eq!(
        got.matches("Error: failure").count(),
        MAX_BLOCKS + 1,
        "{got}"
    );
    assert!(got.contains("[3 more errors not shown]"), "{got}");
    assert!(got.contains("more lines not shown]"), "{got}");
    assert!(got.lines().all(|l| l.chars().count() <= MAX_LINE_CHARS + 1));
    assert!(
        got.lines().count() <= 1 + MAX_BLOCKS * (MAX_BLOCK_LINES + 2) + 2,
        "{}",
        got.lines().count()
    );
    let long = reason(&format!(
        "Error: {}\n\n  on main.tf line 9:\n",
        "y".repeat(1_000)
    ))
    .unwrap();
    let first = long.lines().next().unwrap();
    assert!(first.ends_with("… (main.tf line 9)"), "{first}");
    assert!(first.chars().count() < 240, "{first}");
}

#[test]
fn without_a_block_the_last_line_comes_first() {
    let tail: Vec<String> = [
        "Initializing the backend...",
        "Initializing modules...",
        "Killed",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(
        last_lines(&tail),
        "Killed\n\nInitializing the backend...\nInitializing modules...\nKilled"
    );
    assert_eq!(last_lines(&tail[..1]), "Initializing the backend...");
    assert_eq!(last_lines(&[]), "");
}
