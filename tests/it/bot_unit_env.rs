//! Per-unit credentials (`--unit-env-file`) in the server, over the fake GitHub with the
//! real terraform: a pull request adding two units, one whose plan shows the value its
//! entry gives (masked in the comment, kept in its state) and one whose apply records the
//! role it ran with (the apply's, not the plan's). No value reaches a comment, a check
//! run, a log or the database.

use crate::support::bot_world::{REPO, world_configured};
use cascade::exec::UnitEnv;
use std::path::Path;
use std::sync::Arc;

const SHOWN: &str = "bot-shown-role-8484";
const PLAN: &str = "bot-plan-role-8181";
const APPLY: &str = "bot-apply-role-8282";
/// For another owner's repositories: never given to `acme/infra`.
const OTHER: &str = "bot-other-role-8383";

fn unit_env() -> Arc<UnitEnv> {
    let file = format!(
        r#"- repository: "other/*"
  units: "**"
  env: {{TF_VAR_role: {OTHER}}}
- repository: "acme/*"
  units: global/shown
  env: {{TF_VAR_role: {SHOWN}}}
- repository: "acme/*"
  units: global/creds
  plan: {{TF_VAR_role: {PLAN}}}
  apply: {{TF_VAR_role: {APPLY}}}
"#
    );
    Arc::new(UnitEnv::parse(&file, Path::new("/")).unwrap())
}

const VARIABLE: &str = "terraform {\n  backend \"local\" {}\n}\n\nvariable \"role\" {\n  type    = string\n  default = \"no-role\"\n}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn units_get_their_entrys_values_and_the_apply_its_own() {
    let w = world_configured("", |c| c.unit_env = unit_env()).await;
    let shown =
        format!("{VARIABLE}\nresource \"terraform_data\" \"unit\" {{\n  input = var.role\n}}\n");
    let creds = format!(
        r#"{VARIABLE}
resource "terraform_data" "unit" {{
  input = "creds"
  provisioner "local-exec" {{
    command     = "printf %s \"$ROLE\" > role-at-apply"
    environment = {{ ROLE = var.role }}
  }}
}}
"#
    );
    let (n, head) = w.open_adding(
        "alice",
        "credentials",
        &[
            ("global/shown/terragrunt.hcl", ""),
            ("global/shown/main.tf", &shown),
            ("global/creds/terragrunt.hcl", ""),
            ("global/creds/main.tf", &creds),
        ],
    );
    w.send_pr(n, "opened").await;
    w.until("the plan", |w| w.checks_done(&head)).await;
    let plan = w.plan_comment(n);
    assert!(plan.contains("input  = \"[redacted]\""), "{plan}");
    assert!(plan.contains("input  = \"creds\""), "{plan}");

    w.approve_and_apply(n).await;
    let mut applied = w.applied_units(n);
    applied.sort();
    assert_eq!(applied, ["global/creds", "global/shown"]);

    let checkout = w
        .data
        .path()
        .join("workspaces/checkouts/acme/infra/pr-1/global");
    assert_eq!(
        std::fs::read_to_string(checkout.join("creds/role-at-apply")).unwrap(),
        APPLY
    );
    let state = std::fs::read_to_string(checkout.join("shown/terraform.tfstate")).unwrap();
    assert!(state.contains(SHOWN), "the state keeps the value");

    let mut scanned: Vec<(String, Vec<u8>)> = w
        .bot_texts(n)
        .into_iter()
        .map(|t| ("a comment".to_string(), t.into_bytes()))
        .collect();
    for check in w.fake.check_runs(REPO, &head) {
        let now = check.current();
        let text = format!("{}\n{}\n{}", now.title, now.summary, now.text);
        scanned.push(("the check run".into(), text.into_bytes()));
    }
    for entry in walkdir::WalkDir::new(w.data.path())
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.file_type().is_file())
    {
        let path = entry.path();
        // The checkouts hold terraform's state and what the test's provisioner wrote;
        // provider binaries; terraform's saved plans hold variables by design.
        let rel = path.strip_prefix(w.data.path()).unwrap();
        if rel.starts_with("workspaces")
            || rel.components().any(|c| c.as_os_str() == "plugin-cache")
            || path.extension().is_some_and(|e| e == "tfplan")
        {
            continue;
        }
        scanned.push((rel.display().to_string(), std::fs::read(path).unwrap()));
    }
    assert!(
        scanned.iter().any(|(n, _)| n.ends_with(".log")),
        "the logs were scanned"
    );
    for (name, bytes) in &scanned {
        for secret in [SHOWN, PLAN, APPLY, OTHER] {
            assert!(
                !bytes.windows(secret.len()).any(|b| b == secret.as_bytes()),
                "{secret} is in {name}"
            );
        }
    }
    w.finish().await;
}
