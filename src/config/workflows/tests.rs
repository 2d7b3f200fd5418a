//! `workflows:` in `.cascade.yaml`: what a valid workflow turns into, which workflow a
//! unit gets, and every refusal's message (one snapshot of them all), attacks included.

use super::*;
use crate::config::{FILE_NAME, RepoConfig};
use crate::problem::{Problem, ProblemKind};

const ENVIRONMENTS: &str = "environments:\n  prod: live/prod\n  dev: live/dev\n";

/// A file with [`ENVIRONMENTS`] and one workflow, `k8s`, whose other keys are `body`
/// (written at the workflow's indentation, one key a line).
fn one_workflow(body: &str) -> String {
    let mut yaml = format!("{ENVIRONMENTS}workflows:\n  - name: k8s\n");
    for line in body.lines() {
        yaml.push_str("    ");
        yaml.push_str(line);
        yaml.push('\n');
    }
    yaml
}

/// The problem `yaml` is refused with: a `Config` problem at a line and column.
fn refusal(yaml: &str) -> Problem {
    let problem = match RepoConfig::parse(yaml) {
        Err(problem) => problem,
        Ok(config) => panic!("accepted: {yaml}\n{:?}", config.workflows),
    };
    assert_eq!(problem.kind, ProblemKind::Config);
    assert_eq!(problem.file.as_deref(), Some(FILE_NAME));
    assert!(
        problem.line.is_some() && problem.column.is_some(),
        "no location: {problem}"
    );
    assert!(
        problem.message.chars().count() < 600,
        "a long message: {problem}"
    );
    problem
}

#[test]
fn a_full_workflow_becomes_the_model() {
    let yaml = format!(
        "{ENVIRONMENTS}{}",
        r#"workflows:
  - name: k8s
    units: ["live/*/k8s/**"]
    environments: [prod]
    init:  {extra_args: [-upgrade, -backend-config=backend.hcl]}
    plan:  {extra_args: [-parallelism=4, -var-file=prod.tfvars]}
    apply: {extra_args: [-parallelism=4], targets: ["helm_release.crds"]}
    env:
      - {name: TF_VAR_region, value: eu-west-1}
      - {name: AWS_ROLE_ARN, from_server: prod-deployer}
    pre_plan:
      - run: {command: [tflint, --format, compact], name: lint, when: always, visible_on: always, format: markdown, timeout: 5m, ignore_errors: true}
    post_plan:
      - run: {command: [/usr/local/bin/checkov, -f, "-"], stdin: plan_json}
    pre_apply:
      - run: {command: [scripts/secret-cleanup.sh]}
    post_apply:
      - run: {command: [scripts/argocd-token.sh], ignore_errors: true, when: success}
    pre_destroy:
      - run: {command: [scripts/state-purge.sh], timeout: 1h}
"#
    );
    let config = RepoConfig::parse(&yaml).unwrap();
    let [w] = config.workflows.as_slice() else {
        panic!("{:?}", config.workflows)
    };
    assert_eq!(w.name, "k8s");
    assert_eq!(w.units, ["live/*/k8s/**"]);
    assert_eq!(w.environments, ["prod"]);
    assert_eq!(w.init_args, ["-upgrade", "-backend-config=backend.hcl"]);
    assert_eq!(w.plan_args, ["-parallelism=4", "-var-file=prod.tfvars"]);
    assert_eq!(w.apply_args, ["-parallelism=4"]);
    assert_eq!(w.targets, ["helm_release.crds"]);
    assert_eq!(
        w.env,
        [
            EnvVar {
                name: "TF_VAR_region".into(),
                value: EnvValue::Plain("eu-west-1".into())
            },
            EnvVar {
                name: "AWS_ROLE_ARN".into(),
                value: EnvValue::FromServer("prod-deployer".into())
            },
        ]
    );
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        w.steps(Hook::PrePlan),
        [RunStep {
            name: "lint".into(),
            command: words(&["tflint", "--format", "compact"]),
            when: When::Always,
            visible_on: VisibleOn::Always,
            format: Format::Markdown,
            timeout: Duration::from_secs(300),
            ignore_errors: true,
            stdin: Stdin::None,
        }]
    );
    // Unset keys take their defaults; the name is the program's file name.
    assert_eq!(
        w.steps(Hook::PostPlan),
        [RunStep {
            name: "checkov".into(),
            command: words(&["/usr/local/bin/checkov", "-f", "-"]),
            when: When::Success,
            visible_on: VisibleOn::Failure,
            format: Format::Code,
            timeout: DEFAULT_STEP_TIMEOUT,
            ignore_errors: false,
            stdin: Stdin::PlanJson,
        }]
    );
    assert_eq!(w.steps(Hook::PreApply)[0].name, "secret-cleanup.sh");
    assert!(w.steps(Hook::PostApply)[0].ignore_errors);
    assert_eq!(w.steps(Hook::PreDestroy)[0].timeout, MAX_STEP_TIMEOUT);
}

#[test]
fn short_forms_and_empty_keys() {
    let config = RepoConfig::parse(&one_workflow(
        "units: \"live/**\"\nenvironments: dev\ninit:\nplan: {}\napply:\nenv:\npre_plan: []\n",
    ))
    .unwrap();
    let w = &config.workflows[0];
    assert_eq!(w.units, ["live/**"]);
    assert_eq!(w.environments, ["dev"]);
    assert!(w.init_args.is_empty() && w.targets.is_empty() && w.env.is_empty());
    assert!(Hook::ALL.iter().all(|h| w.steps(*h).is_empty()));
    assert!(
        RepoConfig::parse("workflows:\n")
            .unwrap()
            .workflows
            .is_empty()
    );
    assert!(RepoConfig::default().workflows.is_empty());
}

#[test]
fn workflow_for_is_the_first_covering_workflow_in_its_environments() {
    let yaml = format!(
        "{ENVIRONMENTS}{}",
        r#"workflows:
  - name: prod-k8s
    units: "live/*/k8s/**"
    environments: [prod]
  - name: k8s
    units: ["live/*/k8s/**", "global/k8s/**"]
  - name: dev
    environments: dev
  - name: never
    units: ["live/*/k8s/**"]
"#
    );
    let config = RepoConfig::parse(&yaml).unwrap();
    let workflow = |unit: &str| {
        config
            .workflow_for(&UnitPath::new(unit))
            .map(|w| w.name.as_str())
    };
    assert_eq!(workflow("live/prod/k8s/app"), Some("prod-k8s"));
    assert_eq!(workflow("live/dev/k8s/app"), Some("k8s"));
    assert_eq!(workflow("global/k8s/crds"), Some("k8s"));
    assert_eq!(workflow("live/dev/vpc"), Some("dev"));
    assert_eq!(workflow("live/prod/vpc"), None);
    assert_eq!(
        workflow("live/prod/k8sx/app"),
        None,
        "`*` and `/` as in `ignore`"
    );
    assert_eq!(workflow("global/dns"), None);
    // `DIR/**` covers what lies under DIR, not DIR itself (globset's rule, as in `drift.units`).
    assert_eq!(workflow("global/k8s"), None);
    let catch_all = RepoConfig::parse("workflows:\n  - name: all\n").unwrap();
    assert_eq!(
        catch_all
            .workflow_for(&UnitPath::new("anything/at/all"))
            .map(|w| w.name.as_str()),
        Some("all")
    );
    assert!(
        RepoConfig::default()
            .workflow_for(&UnitPath::new("live/prod/vpc"))
            .is_none()
    );
}

/// Every refusal, `label: file:line:column: message`, in one snapshot.
#[test]
fn refusals_say_where_and_what_to_write() {
    let steps = |n: usize| {
        let mut body = String::from("pre_plan:\n");
        for _ in 0..n {
            body.push_str("  - run: {command: [true]}\n");
        }
        body
    };
    let many_args = format!(
        "plan: {{extra_args: [{}]}}",
        vec!["-compact-warnings"; 65].join(", ")
    );
    let many_targets = format!(
        "apply: {{targets: [{}]}}",
        (0..33)
            .map(|i| format!("a.b{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let many_words = format!(
        "pre_plan:\n  - run: {{command: [{}]}}",
        vec!["x"; 65].join(", ")
    );
    let long_word = format!(
        "pre_plan:\n  - run: {{command: [echo, {}]}}",
        "w".repeat(5000)
    );
    let mut many_workflows = String::from("workflows:\n");
    for i in 0..65 {
        many_workflows.push_str(&format!("  - name: w{i}\n"));
    }
    let duplicate = "workflows:\n  - name: k8s\n  - name: other\n  - name: k8s\n".to_string();
    let cases: Vec<(&str, String)> = vec![
        (
            "name not plain",
            one_workflow("").replace("k8s", "K8s Prod"),
        ),
        (
            "name too long",
            one_workflow("").replace("k8s", &"k".repeat(65)),
        ),
        ("name missing", "workflows:\n  - units: [live/**]\n".into()),
        ("name twice", duplicate),
        ("workflows not a list", "workflows: {k8s: {}}\n".into()),
        ("workflow not a mapping", "workflows: [k8s]\n".into()),
        ("too many workflows", many_workflows),
        ("unknown workflow key", one_workflow("unit: [live/**]")),
        ("bad glob", one_workflow("units: \"live/[k8s\"")),
        ("absolute glob", one_workflow("units: [/live/**]")),
        (
            "unknown environment",
            one_workflow("environments: [staging]"),
        ),
        (
            "no environments at all",
            "workflows:\n  - name: k8s\n    environments: prod\n".into(),
        ),
        ("-chdir", one_workflow("init: {extra_args: [-chdir=../..]}")),
        ("--chdir", one_workflow("plan: {extra_args: [--chdir=..]}")),
        (
            "-plugin-dir",
            one_workflow("init: {extra_args: [-plugin-dir=/tmp]}"),
        ),
        (
            "-from-module",
            one_workflow("init: {extra_args: [-from-module=git::x]}"),
        ),
        ("-target", one_workflow("plan: {extra_args: [-target=a.b]}")),
        (
            "-replace",
            one_workflow("apply: {extra_args: [-replace=a.b]}"),
        ),
        ("-destroy", one_workflow("plan: {extra_args: [-destroy]}")),
        ("-out", one_workflow("plan: {extra_args: [-out=p.tfplan]}")),
        (
            "-state",
            one_workflow("apply: {extra_args: [-state=/tmp/s]}"),
        ),
        (
            "-auto-approve",
            one_workflow("apply: {extra_args: [-auto-approve]}"),
        ),
        ("-input", one_workflow("init: {extra_args: [-input=false]}")),
        ("-json", one_workflow("plan: {extra_args: [-json]}")),
        (
            "unlisted flag",
            one_workflow("plan: {extra_args: [-generate-config-out=x.tf]}"),
        ),
        (
            "plan flag in apply",
            one_workflow("apply: {extra_args: [-var=a=b]}"),
        ),
        (
            "not a flag",
            one_workflow("plan: {extra_args: [prod.tfvars]}"),
        ),
        (
            "flag without value",
            one_workflow("plan: {extra_args: [-var-file]}"),
        ),
        (
            "absolute var file",
            one_workflow("plan: {extra_args: [-var-file=/etc/passwd]}"),
        ),
        (
            "var file outside",
            one_workflow("plan: {extra_args: [-var-file=../../x]}"),
        ),
        (
            "bad parallelism",
            one_workflow("apply: {extra_args: [-parallelism=0]}"),
        ),
        (
            "bad bool",
            one_workflow("plan: {extra_args: [-refresh=no]}"),
        ),
        (
            "credential var",
            one_workflow("plan: {extra_args: [-var=db_password=x]}"),
        ),
        (
            "credential backend setting",
            one_workflow("init: {extra_args: [-backend-config=secret_key=x]}"),
        ),
        ("too many arguments", one_workflow(&many_args)),
        (
            "extra_args not a list",
            one_workflow("plan: {extra_args: -upgrade}"),
        ),
        (
            "unknown phase key",
            one_workflow("plan: {args: [-upgrade]}"),
        ),
        ("unknown apply key", one_workflow("apply: {target: [a.b]}")),
        (
            "target not an address",
            one_workflow("apply: {targets: [\"-helm_release.crds\"]}"),
        ),
        (
            "target with a space",
            one_workflow("apply: {targets: [\"helm release.crds\"]}"),
        ),
        ("target twice", one_workflow("apply: {targets: [a.b, a.b]}")),
        ("too many targets", one_workflow(&many_targets)),
        ("env not a list", one_workflow("env: {TF_VAR_a: b}")),
        ("env bad name", one_workflow("env: [{name: 1X, value: a}]")),
        (
            "env CASCADE_",
            one_workflow("env: [{name: CASCADE_UNIT, value: a}]"),
        ),
        (
            "env set by cascade",
            one_workflow("env: [{name: PATH, value: /tmp}]"),
        ),
        (
            "env credential value",
            one_workflow("env: [{name: AWS_SECRET_ACCESS_KEY, value: abc}]"),
        ),
        (
            "env credential by word",
            one_workflow("env: [{name: TF_VAR_db_password, value: abc}]"),
        ),
        (
            "env tool switch",
            one_workflow("env: [{name: TF_CLI_ARGS_plan, value: -target=a.b}]"),
        ),
        (
            "env both",
            one_workflow("env: [{name: TF_VAR_a, value: b, from_server: c}]"),
        ),
        ("env neither", one_workflow("env: [{name: TF_VAR_a}]")),
        (
            "env bad entry",
            one_workflow("env: [{name: AWS_PROFILE, from_server: ../x}]"),
        ),
        (
            "env twice",
            one_workflow("env: [{name: TF_VAR_a, value: b}, {name: TF_VAR_a, value: c}]"),
        ),
        (
            "env unknown key",
            one_workflow("env: [{name: TF_VAR_a, val: b}]"),
        ),
        ("step not a mapping", one_workflow("pre_plan: [tflint]")),
        (
            "step of another kind",
            one_workflow("pre_plan: [{script: tflint}]"),
        ),
        (
            "hook not a list",
            one_workflow("pre_plan: {run: {command: [x]}}"),
        ),
        ("too many steps", one_workflow(&steps(17))),
        (
            "command missing",
            one_workflow("pre_plan: [{run: {name: x}}]"),
        ),
        (
            "command empty",
            one_workflow("pre_plan: [{run: {command: []}}]"),
        ),
        (
            "command a string",
            one_workflow("pre_plan: [{run: {command: tflint --fix}}]"),
        ),
        (
            "program blank",
            one_workflow("pre_plan: [{run: {command: [\" \"]}}]"),
        ),
        (
            "NUL in a word",
            one_workflow("pre_plan: [{run: {command: [echo, \"a\\0b\"]}}]"),
        ),
        ("word too long", one_workflow(&long_word)),
        ("too many words", one_workflow(&many_words)),
        (
            "step name too long",
            one_workflow(&format!(
                "pre_plan: [{{run: {{command: [x], name: {}}}}}]",
                "n".repeat(65)
            )),
        ),
        (
            "timeout too long",
            one_workflow("pre_plan: [{run: {command: [x], timeout: 2h}}]"),
        ),
        (
            "timeout zero",
            one_workflow("pre_plan: [{run: {command: [x], timeout: 0s}}]"),
        ),
        (
            "timeout not a time",
            one_workflow("pre_plan: [{run: {command: [x], timeout: soon}}]"),
        ),
        (
            "bad when",
            one_workflow("pre_plan: [{run: {command: [x], when: sometimes}}]"),
        ),
        (
            "bad visible_on",
            one_workflow("pre_plan: [{run: {command: [x], visible_on: success}}]"),
        ),
        (
            "bad format",
            one_workflow("pre_plan: [{run: {command: [x], format: html}}]"),
        ),
        (
            "bad stdin",
            one_workflow("post_plan: [{run: {command: [x], stdin: plan}}]"),
        ),
        (
            "plan_json before the plan",
            one_workflow("pre_plan: [{run: {command: [x], stdin: plan_json}}]"),
        ),
        (
            "plan_json at apply",
            one_workflow("post_apply: [{run: {command: [x], stdin: plan_json}}]"),
        ),
        (
            "unknown run key",
            one_workflow("pre_plan: [{run: {command: [x], shell: bash}}]"),
        ),
        ("top-level env", "env:\n  TF_VAR_role: x\n".into()),
    ];
    let lines: Vec<String> = cases
        .iter()
        .map(|(label, yaml)| format!("{label}: {}", refusal(yaml)))
        .collect();
    insta::assert_snapshot!(lines.join("\n"));
}

/// A hostile workflow: each attempt refused on its own with a message saying why, and
/// nothing panics or grows with the input.
#[test]
fn attacks_are_refused_with_clear_messages() {
    let huge_hook = {
        let mut body = String::from("post_apply:\n");
        for i in 0..10_000 {
            body.push_str(&format!("  - run: {{command: [step{i}]}}\n"));
        }
        body
    };
    for (body, says) in [
        ("init: {extra_args: [-chdir=../..]}", "in its own directory"),
        ("plan: {extra_args: [\"-chdir=/\"]}", "in its own directory"),
        ("init: {extra_args: [-plugin-dir=/tmp]}", "provider cache"),
        (
            "plan: {extra_args: [-var-file=/etc/passwd]}",
            "does not name a file in the repository",
        ),
        (
            "plan: {extra_args: [-var-file=../../x]}",
            "leaves the unit's directory",
        ),
        (
            "plan: {extra_args: [\"-var-file=a\\\\..\\\\..\\\\x\"]}",
            "leaves the unit's directory",
        ),
        (
            "env: [{name: AWS_SECRET_ACCESS_KEY, value: AKIAIOSFODNN7EXAMPLE}]",
            "never define them",
        ),
        (
            "env: [{name: TF_CLI_ARGS, value: -chdir=/}]",
            "changes how cascade runs",
        ),
        (
            "env: [{name: CASCADE_GITHUB_TOKEN, from_server: x}]",
            "cascade's own",
        ),
        ("pre_plan: [{run: {command: [\"sh\\0\", -c, id]}}]", "NUL"),
        ("pre_plan: [{run: {command: [sh, \"-c\\0id\"]}}]", "NUL"),
        (&huge_hook, "list at most 16"),
    ] {
        let problem = refusal(&one_workflow(body));
        assert!(problem.message.contains(says), "{body:.80}: {problem}");
        assert!(
            !problem.message.contains("AKIAIOSFODNN7EXAMPLE"),
            "a message quotes a credential: {problem}"
        );
    }
}

/// A value of any length is quoted by its first characters only.
#[test]
fn long_values_are_shortened() {
    let long = "k".repeat(3000);
    for body in [
        format!("plan: {{extra_args: [-{long}]}}"),
        format!("plan: {{extra_args: [-var-file=/{long}]}}"),
        format!("apply: {{targets: [{long}]}}"),
        format!("env: [{{name: {long}, value: a}}]"),
        format!("env: [{{name: A, from_server: \"{long} \"}}]"),
        format!("pre_plan: [{{run: {{command: [x], name: \"{long}\"}}}}]"),
        format!("pre_plan: [{{run: {{command: [x], timeout: {long}}}}}]"),
        format!("environments: [{long}]"),
        format!("units: [\"/{long}\"]"),
    ] {
        refusal(&one_workflow(&body));
    }
    refusal(&one_workflow("").replace("k8s", &long));
}
