//! The exact command lines cascade runs, per tool and step, with the unit's
//! workflow's extra arguments and a two-stage apply's targets. Kept pure so the
//! terragrunt executor (no binary on these machines) is tested by its lines.

use super::UnitJob;
use crate::unit::{StateChange, Tool};

/// One command of a unit's run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Init,
    Plan,
    Show,
    Apply,
    /// `terragrunt stack generate`, in the stack's directory, before a unit
    /// the stack generates is planned.
    StackGenerate,
    /// `state list`: the addresses in the unit's state, one a line.
    StateList,
    /// The job's hand-made state change (`import`, `state rm`); `state list` for a job
    /// without one, so the step never does more than the job asks.
    StateChange,
}

/// The program (by tool) and arguments for `step` of `job`.
pub fn command_line(tool: Tool, step: Step, job: &UnitJob) -> (&'static str, Vec<String>) {
    let plan_file = job.plan_file.to_string_lossy().to_string();
    let mut args: Vec<String> = Vec::new();
    let program = tool_name(tool);
    // The workflow's extra arguments (checked against an allow-list when read).
    let workflow = job.workflow.as_deref();
    match step {
        Step::Init => {
            args.extend(["init", "-input=false", "-no-color"].map(String::from));
            args.extend(job.init_args.iter().cloned());
            args.extend(workflow.iter().flat_map(|w| w.init_args.iter().cloned()));
        }
        Step::Plan => {
            args.extend(
                // -detailed-exitcode: 0 means the plan is empty, and `show -json` can be skipped.
                [
                    "plan",
                    "-input=false",
                    "-no-color",
                    "-lock-timeout=5m",
                    "-detailed-exitcode",
                ]
                .map(String::from),
            );
            if job.destroy {
                args.push("-destroy".into());
            }
            args.extend(workflow.iter().flat_map(|w| w.plan_args.iter().cloned()));
            args.extend(job.plan_targets.iter().map(|t| format!("-target={t}")));
            args.push(format!("-out={plan_file}"));
        }
        Step::Show => args.extend([
            "show".to_string(),
            "-json".to_string(),
            "-no-color".to_string(),
            plan_file,
        ]),
        Step::StackGenerate => args.extend(["stack", "generate"].map(String::from)),
        Step::StateList => args.extend(["state", "list", "-no-color"].map(String::from)),
        Step::StateChange => match &job.state_change {
            // The address and id were checked when read (never an option, never empty)
            // and are one argument each; options all come before them.
            Some(StateChange::Import { address, id }) => {
                args.extend(
                    ["import", "-input=false", "-no-color", "-lock-timeout=5m"].map(String::from),
                );
                args.extend([address.to_string(), id.to_string()]);
            }
            Some(StateChange::Remove { address }) => {
                args.extend(["state", "rm", "-no-color", "-lock-timeout=5m"].map(String::from));
                args.push(address.to_string());
            }
            None => args.extend(["state", "list", "-no-color"].map(String::from)),
        },
        Step::Apply => {
            args.extend(
                [
                    "apply",
                    "-input=false",
                    "-no-color",
                    "-auto-approve",
                    "-lock-timeout=5m",
                ]
                .map(String::from),
            );
            // Before the plan file: terraform reads no option after it.
            args.extend(workflow.iter().flat_map(|w| w.apply_args.iter().cloned()));
            args.push(plan_file);
        }
    }
    if tool == Tool::Terragrunt {
        // Terragrunt initialises on its own (auto-init) and must never prompt.
        args.push("--non-interactive".into());
    }
    (program, args)
}

/// The tool's name (as on PATH, whatever binary is configured) and the step's
/// subcommand, for messages: `terraform plan`. Never a path.
pub fn command_name(tool: Tool, step: Step) -> String {
    let subcommand = match step {
        Step::StackGenerate => "stack generate",
        Step::StateList => "state list",
        other => other.name(),
    };
    format!("{} {subcommand}", tool_name(tool))
}

/// [`command_name`] for `step` of `job`: a state change is named by what it does
/// (`terraform import`, `terraform state rm`).
pub fn job_command_name(job: &UnitJob, step: Step) -> String {
    let subcommand = match (step, &job.state_change) {
        (Step::StateChange, Some(StateChange::Import { .. })) => "import",
        (Step::StateChange, Some(StateChange::Remove { .. })) => "state rm",
        (Step::StateChange, None) => "state list",
        _ => return command_name(job.tool, step),
    };
    format!("{} {subcommand}", tool_name(job.tool))
}

fn tool_name(tool: Tool) -> &'static str {
    match tool {
        Tool::Terraform => "terraform",
        Tool::Tofu => "tofu",
        Tool::Terragrunt => "terragrunt",
    }
}

impl Step {
    /// The subcommand, which also names the step's working files.
    pub fn name(self) -> &'static str {
        match self {
            Step::Init => "init",
            Step::Plan => "plan",
            Step::Show => "show",
            Step::Apply => "apply",
            Step::StackGenerate => "generate",
            Step::StateList => "state-list",
            Step::StateChange => "state-change",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unit::UnitPath;
    use std::path::PathBuf;
    use std::time::Duration;

    fn job(destroy: bool) -> UnitJob {
        UnitJob {
            unit: UnitPath::new("live/vpc"),
            dir: PathBuf::from("/repo/live/vpc"),
            root: PathBuf::from("/repo"),
            repo: "acme/infra".into(),
            sources: vec![],
            tool: Tool::Terragrunt,
            plan_file: PathBuf::from("/data/runs/r1/plans/live--vpc.tfplan"),
            log: PathBuf::from("/data/runs/r1/001_live--vpc.log"),
            work: PathBuf::from("/data/runs/r1/work/live--vpc"),
            destroy,
            init_args: vec![],
            timeout: Duration::from_secs(60),
            init_timeout: Duration::from_secs(60),
            phase: crate::exec::Phase::Plan,
            workflow: None,
            plan_targets: Vec::new(),
            state_change: None,
        }
    }

    fn line(tool: Tool, step: Step, destroy: bool) -> String {
        let (program, args) = command_line(tool, step, &job(destroy));
        format!("{program} {}", args.join(" "))
    }

    #[test]
    fn terragrunt_command_lines() {
        assert_eq!(
            line(Tool::Terragrunt, Step::Plan, false),
            "terragrunt plan -input=false -no-color -lock-timeout=5m -detailed-exitcode -out=/data/runs/r1/plans/live--vpc.tfplan --non-interactive"
        );
        assert_eq!(
            line(Tool::Terragrunt, Step::Plan, true),
            "terragrunt plan -input=false -no-color -lock-timeout=5m -detailed-exitcode -destroy -out=/data/runs/r1/plans/live--vpc.tfplan --non-interactive"
        );
        assert_eq!(
            line(Tool::Terragrunt, Step::Show, false),
            "terragrunt show -json -no-color /data/runs/r1/plans/live--vpc.tfplan --non-interactive"
        );
        assert_eq!(
            line(Tool::Terragrunt, Step::Apply, false),
            "terragrunt apply -input=false -no-color -auto-approve -lock-timeout=5m /data/runs/r1/plans/live--vpc.tfplan --non-interactive"
        );
    }

    #[test]
    fn the_stack_generate_command_line() {
        assert_eq!(
            line(Tool::Terragrunt, Step::StackGenerate, false),
            "terragrunt stack generate --non-interactive"
        );
        assert_eq!(
            command_name(Tool::Terragrunt, Step::StackGenerate),
            "terragrunt stack generate"
        );
    }

    #[test]
    fn terraform_and_tofu_command_lines() {
        assert_eq!(
            line(Tool::Terraform, Step::Init, false),
            "terraform init -input=false -no-color"
        );
        assert_eq!(
            line(Tool::Tofu, Step::Apply, false),
            "tofu apply -input=false -no-color -auto-approve -lock-timeout=5m /data/runs/r1/plans/live--vpc.tfplan"
        );
    }

    /// A job whose workflow adds arguments to each built-in command.
    fn with_workflow(tool: Tool, targets: &[&str]) -> UnitJob {
        let mut workflow = crate::config::workflows::Workflow::with_name("two-stage");
        workflow.init_args = vec!["-upgrade".into()];
        workflow.plan_args = vec!["-parallelism=5".into(), "-refresh=false".into()];
        workflow.apply_args = vec!["-parallelism=2".into()];
        UnitJob {
            tool,
            workflow: Some(std::sync::Arc::new(workflow)),
            plan_targets: targets.iter().map(|t| t.to_string()).collect(),
            ..job(false)
        }
    }

    fn workflow_line(tool: Tool, step: Step, targets: &[&str]) -> String {
        let (program, args) = command_line(tool, step, &with_workflow(tool, targets));
        format!("{program} {}", args.join(" "))
    }

    #[test]
    fn a_workflows_extra_arguments_go_to_their_own_command() {
        assert_eq!(
            workflow_line(Tool::Terraform, Step::Init, &[]),
            "terraform init -input=false -no-color -upgrade"
        );
        assert_eq!(
            workflow_line(Tool::Terraform, Step::Plan, &[]),
            "terraform plan -input=false -no-color -lock-timeout=5m -detailed-exitcode -parallelism=5 -refresh=false -out=/data/runs/r1/plans/live--vpc.tfplan"
        );
        // Before the plan file, which ends terraform's options.
        assert_eq!(
            workflow_line(Tool::Terraform, Step::Apply, &[]),
            "terraform apply -input=false -no-color -auto-approve -lock-timeout=5m -parallelism=2 /data/runs/r1/plans/live--vpc.tfplan"
        );
        assert_eq!(
            workflow_line(Tool::Terragrunt, Step::Apply, &[]),
            "terragrunt apply -input=false -no-color -auto-approve -lock-timeout=5m -parallelism=2 /data/runs/r1/plans/live--vpc.tfplan --non-interactive"
        );
        // `show` and `stack generate` take none.
        assert_eq!(
            workflow_line(Tool::Terraform, Step::Show, &[]),
            "terraform show -json -no-color /data/runs/r1/plans/live--vpc.tfplan"
        );
        assert_eq!(
            workflow_line(Tool::Terragrunt, Step::StackGenerate, &[]),
            "terragrunt stack generate --non-interactive"
        );
    }

    #[test]
    fn a_first_stage_plans_only_its_targets() {
        assert_eq!(
            workflow_line(
                Tool::Terragrunt,
                Step::Plan,
                &["helm_release.crds", "module.x.aws_iam_role.r[\"a\"]"]
            ),
            "terragrunt plan -input=false -no-color -lock-timeout=5m -detailed-exitcode -parallelism=5 -refresh=false -target=helm_release.crds -target=module.x.aws_iam_role.r[\"a\"] -out=/data/runs/r1/plans/live--vpc.tfplan --non-interactive"
        );
        // Targets go to `plan` only: the apply applies the plan file, which holds them.
        assert_eq!(
            workflow_line(Tool::Terraform, Step::Apply, &["helm_release.crds"]),
            workflow_line(Tool::Terraform, Step::Apply, &[])
        );
        // A job with no workflow but targets (a stage of the built-in two-stage apply).
        let job = UnitJob {
            tool: Tool::Terraform,
            plan_targets: vec!["a.b".into()],
            ..job(false)
        };
        let (_, args) = command_line(Tool::Terraform, Step::Plan, &job);
        assert!(args.contains(&"-target=a.b".to_string()), "{args:?}");
    }

    /// A job changing the state of its unit by hand.
    fn state_line(tool: Tool, change: Option<StateChange>) -> String {
        let job = UnitJob {
            tool,
            state_change: change,
            ..job(false)
        };
        let (program, args) = command_line(tool, Step::StateChange, &job);
        format!("{program} {}", args.join(" "))
    }

    #[test]
    fn state_command_lines_put_the_checked_values_after_every_option() {
        use crate::unit::{ImportId, ResourceAddress};
        let address = ResourceAddress::parse("module.a[\"k\"].terraform_data.x")
            .unwrap()
            .0;
        let import = StateChange::Import {
            address: address.clone(),
            id: ImportId::parse("arn:aws:iam::1:role/x").unwrap(),
        };
        assert_eq!(
            state_line(Tool::Terraform, Some(import.clone())),
            "terraform import -input=false -no-color -lock-timeout=5m module.a[\"k\"].terraform_data.x arn:aws:iam::1:role/x"
        );
        assert_eq!(
            state_line(Tool::Terragrunt, Some(import)),
            "terragrunt import -input=false -no-color -lock-timeout=5m module.a[\"k\"].terraform_data.x arn:aws:iam::1:role/x --non-interactive"
        );
        assert_eq!(
            state_line(Tool::Tofu, Some(StateChange::Remove { address })),
            "tofu state rm -no-color -lock-timeout=5m module.a[\"k\"].terraform_data.x"
        );
        // Without a change the step only reads.
        assert_eq!(
            state_line(Tool::Terragrunt, None),
            "terragrunt state list -no-color --non-interactive"
        );
        assert_eq!(
            line(Tool::Terraform, Step::StateList, false),
            "terraform state list -no-color"
        );
    }
}
