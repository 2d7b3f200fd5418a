//! A hand-made state change of one unit (`/import`, `/state rm`): run through the same
//! executor seam, sandbox, credentials (an apply's: the change writes state) and timeout
//! as a plan of that unit, in a private run directory of its own that is deleted once
//! the change is done.
//!
//! Owns only running it and making its failure safe to show (redacted, the server's
//! paths replaced, bounded). Never decides whether it may run (the bot does), never
//! records a run (nothing resumes a state change: it is short, and a restarted server
//! leaves its result to a `/plan`), and never touches the pull request's plan.

use super::{Engine, PlanTarget, RunRules};
use crate::exec::{Executor, Phase, StateDiff, UnitJob};
use crate::store::{PlanKey, RunStore};
use crate::unit::StateChange;
use anyhow::Context;
use std::os::unix::fs::DirBuilderExt;
use tokio_util::sync::CancellationToken;

/// The most of a failure's reason shown, in characters (the plan comment's failed units
/// show as much).
const MAX_REASON_CHARS: usize = 4_000;

impl<E: Executor, S: RunStore> Engine<E, S> {
    /// Makes `change` in `target`'s unit: what `state list` shows it added and removed,
    /// or why it failed (redacted, without the server's paths, at most
    /// [`MAX_REASON_CHARS`]). `Err` only for cascade's own trouble (the run directory).
    pub async fn change_state(
        &self,
        repo: &PlanKey,
        target: &PlanTarget,
        change: &StateChange,
        rules: &RunRules,
    ) -> anyhow::Result<Result<StateDiff, String>> {
        if let Some(why) = target.refusal() {
            return Ok(Err(why));
        }
        let id = uuid::Uuid::new_v4().simple().to_string();
        let run_dir = self.data_dir.join("runs").join(format!("state-{id}"));
        // Private: while a command runs, its raw output is in it.
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&run_dir)
            .with_context(|| format!("cannot create the run directory {}", run_dir.display()))?;
        let slug = target.path.file_stem();
        let job = UnitJob {
            unit: target.path.clone(),
            dir: target.dir.clone(),
            root: target.root.clone(),
            repo: repo.repository().to_string(),
            sources: target.sources.clone(),
            tool: target.tool,
            plan_file: run_dir.join("plans").join(format!("{slug}.tfplan")),
            log: run_dir.join(format!("{slug}.log")),
            work: run_dir.join("work").join(&slug),
            destroy: false,
            init_args: target.init_args.clone(),
            timeout: self.timeout,
            init_timeout: self.init_timeout,
            phase: Phase::Apply,
            workflow: rules.workflow(&target.path),
            plan_targets: Vec::new(),
            state_change: Some(change.clone()),
        };
        // Not cancelled by a push: a state change runs to its end or its timeout.
        let result = self
            .executor
            .change_state(&job, &CancellationToken::new())
            .await;
        let paths =
            super::failure_log::server_paths(&self.data_dir, &run_dir, std::iter::once(target));
        if let Err(e) = std::fs::remove_dir_all(&run_dir) {
            tracing::warn!(dir = %run_dir.display(), error = %e, "cannot delete a state change's run directory");
        }
        Ok(result.map_err(|e| {
            let reason = paths.scrub(&crate::redact::redact(&e.to_string()));
            bounded(&reason)
        }))
    }
}

/// `reason`'s first [`MAX_REASON_CHARS`] characters at most (the cause comes first, as
/// the executor words it), with a mark where the rest was cut.
fn bounded(reason: &str) -> String {
    if reason.chars().count() <= MAX_REASON_CHARS {
        return reason.to_string();
    }
    let kept: String = reason.chars().take(MAX_REASON_CHARS).collect();
    format!("{kept}\n… (cut)")
}
