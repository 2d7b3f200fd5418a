//! The comment's view model — what the engine hands to [`Comments`](super::Comments) — and
//! the render context the templates actually see.
//!
//! The view model is plain data in the engine's terms. The render context adds what a
//! Handlebars template cannot compute itself (a unit's change count, its resource lines, its
//! rendered plan ready for a ```` ```diff ```` block, fences long enough for an error excerpt
//! or a plan). A pull request's text (unit paths, reasons, error excerpts) is handed over as
//! it is, on one line where it is shown on one line and with every character visible
//! (`inert::visible_line`); the templates place it with the `inert` helpers (`code`, `cell`,
//! `html_code`, `fenced`), and a plain `{{field}}` prints it as inert text. No field holds a
//! pull request's text as Markdown. The context's field names are the contract for repo
//! template overrides; they are listed in the header comment of each built-in template.

use super::diff::diff_text;
use super::risk::{RISKS_SHOWN, RiskContext, resource_parts, risks, summary};
use super::steps::{StepBudget, StepContext};
use crate::forge::Spelling;
use crate::inert::{fence_for, visible_line};
use crate::plan::render::RenderedPlan;
use crate::plan::{Counts, OutputChange, ResourceChange};
use serde::Serialize;

/// Everything a plan comment shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlanView {
    /// The plan id a reviewer types after `/apply`, or the fixed id of a plan without changes.
    pub plan_id: String,
    /// False when no unit changes anything: the comment then says there is nothing to apply
    /// and shows no `/apply` line.
    pub needs_approval: bool,
    /// Short sha of the planned head commit.
    pub head: String,
    /// Short sha of the base commit the head was diffed against.
    pub base: String,
    /// Sum over every planned unit, destroyed units included.
    pub totals: Counts,
    /// The planned units, wave by wave, in wave order.
    pub waves: Vec<WaveView>,
    /// Units the pull request deletes; destroyed after the units that depend on them.
    pub destroys: Vec<UnitView>,
    /// Units whose plan failed.
    pub failed: Vec<Problem>,
    /// Units not planned because something they depend on failed.
    pub skipped: Vec<Problem>,
    /// Units whose dependencies could not be worked out without executing code.
    pub unresolved: Vec<Problem>,
    /// The units of `unresolved` this plan walks: each is ordered after the others, since its
    /// dependencies are unknown (`scan::targets`); the list item says so.
    pub ordered_last: Vec<String>,
    /// Units another pull request holds the lock for.
    pub locked: Vec<Problem>,
    /// The remote sources the planned units were generated from, each with the commit
    /// its ref resolved to for this plan (`records::sources_of`).
    pub sources: Vec<SourceView>,
    /// How many rounds of `/apply` this plan may take at most: 1, plus the longest chain
    /// of units this plan changes upstream of a provisional unit (each link may stop the
    /// apply and come back as a new plan).
    pub rounds: usize,
    /// The workflow steps each unit shows (`visible_on`), by unit.
    pub steps: Vec<super::steps::UnitSteps>,
    /// What the policy sets found, by unit then set (only units with findings).
    pub policies: Vec<super::policies::PolicyView>,
    /// The policy files the pull request changes: not used until merged, the comment says.
    pub policy_edits: Vec<String>,
    /// Which units apply after merge (`apply: on_merge`) and which by comment.
    pub merge_mode: super::after_merge::MergeModeView,
    /// A plan of `/destroy` (every unit in `destroys`, still in the code): the comment
    /// gets a louder header and says who named the units.
    pub destroy_command: bool,
}

/// A remote stack source: the repository (no credentials), the ref it names, the commit
/// the ref resolved to, and how many planned units came from it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SourceView {
    pub url: String,
    pub reference: Option<String>,
    pub commit: String,
    pub units: usize,
}

/// One wave of the plan: units whose in-scope dependencies are all in earlier waves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WaveView {
    /// 1-based wave number.
    pub number: usize,
    /// The wave's units, sorted by path.
    pub units: Vec<UnitView>,
}

/// One planned unit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UnitView {
    /// The unit's path relative to the repo root.
    pub path: String,
    /// What its plan would do.
    pub counts: Counts,
    /// The first 12 hex digits of the unit's plan fingerprint.
    pub fingerprint: String,
    /// The resources the plan touches, in the plan's order.
    pub resources: Vec<ResourceChange>,
    /// The outputs the plan changes.
    pub outputs: Vec<OutputChange>,
    /// True when the plan changes nothing; such a unit gets a table row but no resource list.
    pub no_changes: bool,
    /// Planned against outputs that an upstream apply in this plan may change.
    pub provisional: bool,
    /// The plan as `terraform plan` draws it (masked, redacted, bounded), shown in place of
    /// the resource list; `None` for plans stored before cascade kept it.
    pub rendered: Option<RenderedPlan>,
    /// How many times its plan was tried again after a transient failure.
    pub retried: u32,
}

/// A unit that was not planned or applied, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The unit's path.
    pub unit: String,
    /// Why; may span several lines (an error excerpt). The first line is shown in lists,
    /// the whole text in a collapsed block.
    pub reason: String,
    /// How many times its plan was tried again after a transient failure (0 for anything
    /// but a unit that failed to plan).
    pub retried: u32,
}

/// Everything an apply result comment shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ApplyView {
    /// The plan id that was approved with `/apply`.
    pub plan_id: String,
    /// How the apply ended as a whole.
    pub outcome: ApplyOutcome,
    /// Every unit of the plan, in walk order.
    pub units: Vec<ApplyUnitView>,
    /// When a unit's plan changed since approval, or only some units were applied: the
    /// new plan for what remains, with its new id, shown inside the apply result.
    pub new_plan: Option<PlanView>,
    /// The apply-phase workflow steps each unit shows, by unit.
    pub steps: Vec<super::steps::UnitSteps>,
    /// For an apply after merge (`apply: on_merge`): the merge commit it ran at.
    pub merge_commit: Option<String>,
}

/// How an apply ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApplyOutcome {
    /// Every unit applied or had nothing to do.
    Applied,
    /// Some units applied, some failed (and their dependents were skipped).
    Partial,
    /// Nothing was applied.
    Failed,
    /// A unit's fresh plan differed from the approved one; a new plan is attached.
    PlanChanged,
    /// The units named (`/apply <id> unit…`) applied or had nothing to do; the rest of
    /// the plan is attached as a new plan.
    SubsetApplied,
}

/// One unit's part in an apply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ApplyUnitView {
    /// The unit's path.
    pub path: String,
    /// What happened to it.
    pub status: ApplyStatus,
    /// An error excerpt (failed) or the reason it was not applied (skipped); may be empty.
    pub detail: String,
    /// The pull request deletes it: applied means destroyed.
    pub destroy: bool,
    /// For an applied unit, what was applied: resource counts, and how many outputs.
    pub applied: Option<(Counts, usize)>,
    /// How long its apply took, when cascade timed it.
    pub duration: Option<std::time::Duration>,
    /// The end of what its apply printed (redacted); empty when none.
    pub output: Vec<String>,
    /// When its plan changed since approval: what changed, and why.
    pub since_approval: Option<ChangeView>,
}

/// How a unit's plan changed between approval and apply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChangeView {
    /// The units of the plan upstream of it that this apply applied: it was re-planned
    /// with their real outputs. Empty: the change came from outside the plan.
    pub upstream: Vec<String>,
    /// The approved plan against the fresh one, as a unified diff (`since.rs`); `None`
    /// when neither could be shown.
    pub difference: Option<String>,
}

/// What happened to one unit during an apply. Templates see the kebab-case spelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApplyStatus {
    /// Its approved plan was applied.
    Applied,
    /// Its fresh plan was empty: nothing to do.
    Unchanged,
    /// The apply failed.
    Failed,
    /// Its fresh plan differed from the approved one, so it was not applied.
    ChangedSinceApproval,
    /// Not applied because a unit it depends on failed or changed.
    Skipped,
}

/// How many characters of a reason fit on one list line or table cell.
pub(super) const ONE_LINE_MAX: usize = 240;

/// What `plan.md.hbs` sees.
#[derive(Serialize)]
pub(super) struct PlanContext {
    plan_id: String,
    /// As in [`PlanView::destroy_command`].
    destroy_command: bool,
    /// `/apply <plan_id>`, the exact line to type (`cascade apply <plan_id>` on GitLab).
    apply_command: String,
    /// What starts a command: `/`, or `cascade ` on GitLab.
    command_prefix: String,
    /// `pull request`, or `merge request` on GitLab.
    change_request: String,
    needs_approval: bool,
    head: String,
    base: String,
    totals: Counts,
    /// The plan in one line, most dangerous first: "8 to replace, 16 to change in 24 of 32
    /// units; 3 outputs change" (cascade's own words and numbers).
    summary: String,
    /// The first [`RISKS_SHOWN`] destroys and replacements among the planned units,
    /// destroys first; `more_risks` the rest.
    risks: Vec<RiskContext>,
    more_risks: Vec<RiskContext>,
    risk_count: usize,
    /// The planned units that change something, in wave order, each with its wave: the
    /// one table's rows.
    changing: Vec<UnitContext>,
    /// The paths of the planned units that change nothing, and "8 units unchanged".
    unchanged: Vec<String>,
    unchanged_text: String,
    /// Planned units over all waves, destroyed units not included.
    unit_count: usize,
    wave_count: usize,
    waves: Vec<WaveContext>,
    destroys: Vec<UnitContext>,
    /// True when some unit is provisional: the template then explains the word.
    has_provisional: bool,
    /// As in [`PlanView::rounds`]; the template says it when it is more than 1.
    rounds: usize,
    /// Units that change something, in wave order then destroyed units: the ones that get a
    /// collapsible block with their rendered plan (or resource list). Only these carry `diff`.
    changed_units: Vec<UnitContext>,
    /// How many of `changed_units` had their rendered plan left out to keep the comment
    /// within its number of comments (see `fit.rs`), and the sentence saying so.
    pub(super) diffs_cut: usize,
    pub(super) diffs_cut_text: String,
    failed: Vec<ProblemContext>,
    skipped: Vec<ProblemContext>,
    unresolved: Vec<ProblemContext>,
    locked: Vec<ProblemContext>,
    sources: Vec<SourceContext>,
    /// Steps of units with no section of their own (unchanged units): `{unit, steps}`.
    other_steps: Vec<UnitStepsContext>,
    /// The Policies section's fields (`policy_blocks`, `policy_notes`, …), at this level.
    #[serde(flatten)]
    policies: super::policies::PolicySection,
    /// What applies after merge (`on_merge_only`, `on_merge`, `apply_others_command`).
    #[serde(flatten)]
    after_merge: super::after_merge::AfterMergeSection,
}

/// A unit's steps, for units shown nowhere else.
#[derive(Serialize)]
struct UnitStepsContext {
    unit: String,
    steps: Vec<StepContext>,
}

/// A remote source's row: the commit short, like the head's.
#[derive(Clone, Serialize)]
struct SourceContext {
    url: String,
    reference: String,
    commit: String,
    units: usize,
}

#[derive(Clone, Serialize)]
struct WaveContext {
    number: usize,
    units: Vec<UnitContext>,
}

#[derive(Clone, Serialize)]
pub(super) struct UnitContext {
    path: String,
    /// Its wave (1-based); 0 for a unit the pull request deletes.
    wave: usize,
    counts: Counts,
    /// "1 to replace, 2 to change": its non-zero counts, most dangerous first; "none"
    /// when only outputs change.
    counts_text: String,
    /// How many resources and how many outputs its plan changes.
    resource_count: usize,
    output_count: usize,
    fingerprint: String,
    no_changes: bool,
    provisional: bool,
    /// "retried 2×" when its plan took retries, else empty.
    retried: String,
    /// Resources plus outputs.
    changes: usize,
    /// "2 resources, 1 output", "1 output": what its plan changes.
    changes_text: String,
    /// `+   create  aws_s3_bucket.logs`, one per resource, for a ```` ```diff ```` block.
    resource_lines: Vec<String>,
    /// The same for outputs.
    output_lines: Vec<String>,
    /// The rendered plan, for a ```` ```diff ```` block (`+` and `-` moved to the first
    /// column, where GitHub colours them); empty when there is none or it was cut.
    diff: String,
    /// A backtick fence longer than any backtick run in `diff`.
    diff_fence: String,
    /// How many lines the rendered plan has (also once cut).
    diff_lines: usize,
    /// True when the rendered plan was left out so that the comment fits its comments.
    diff_cut: bool,
    /// Its workflow steps that show (`visible_on`), in the order they ran.
    steps: Vec<StepContext>,
}

#[derive(Serialize)]
struct ProblemContext {
    unit: String,
    /// First line of the reason (one line, cut at [`ONE_LINE_MAX`]), for a code span.
    reason: String,
    /// The whole reason when it does not fit on one line, else empty.
    detail: String,
    /// A backtick fence longer than any backtick run in `detail`.
    fence: String,
    /// "retried 2×; comment `/plan` to try again" (cascade's own Markdown) for a unit that
    /// failed to plan after retries, else empty.
    retried: String,
    /// True when its log is in the `cascade` check: `detail` is then empty.
    see_check: bool,
    /// True for an unresolved unit this plan orders after the others.
    ordered_last: bool,
    /// Its workflow steps that show.
    steps: Vec<StepContext>,
}

impl PlanContext {
    /// The context for `view`; `logs_in_check`: see [`super::Comments::logs_in_check`].
    pub(super) fn new(view: &PlanView, spelling: &Spelling, logs_in_check: bool) -> PlanContext {
        let waves: Vec<WaveContext> = view
            .waves
            .iter()
            .map(|w| WaveContext {
                number: w.number,
                units: w
                    .units
                    .iter()
                    .map(|u| UnitContext::new(u, w.number))
                    .collect(),
            })
            .collect();
        let destroys: Vec<UnitContext> = view
            .destroys
            .iter()
            .map(|u| UnitContext::new(u, 0))
            .collect();
        let (changing, unchanged): (Vec<UnitContext>, Vec<UnitContext>) = waves
            .iter()
            .flat_map(|w| w.units.iter().cloned())
            .partition(|u| u.changes > 0);
        let mut risks = risks(view);
        let more_risks = risks.split_off(risks.len().min(RISKS_SHOWN));
        let planned = || waves.iter().flat_map(|w| w.units.iter());
        let changed_units = view
            .waves
            .iter()
            .flat_map(|w| w.units.iter())
            .chain(view.destroys.iter())
            .filter(|u| !u.no_changes && u.resources.len() + u.outputs.len() > 0)
            .map(|u| UnitContext::with_diff(u, wave_of(view, &u.path)))
            .collect();
        let mut context = PlanContext {
            plan_id: line(&view.plan_id),
            destroy_command: view.destroy_command,
            apply_command: spelling.command(&format!("apply {}", line(&view.plan_id))),
            command_prefix: spelling.command_prefix.to_string(),
            change_request: spelling.change_request.to_string(),
            needs_approval: view.needs_approval,
            head: line(&view.head),
            base: line(&view.base),
            totals: view.totals,
            summary: summary(view),
            risk_count: risks.len() + more_risks.len(),
            risks,
            more_risks,
            unchanged_text: format!("{} unchanged", plural(unchanged.len(), "unit")),
            unchanged: unchanged.into_iter().map(|u| u.path).collect(),
            changing,
            unit_count: planned().count(),
            wave_count: waves.len(),
            has_provisional: planned().chain(destroys.iter()).any(|u| u.provisional),
            rounds: view.rounds,
            changed_units,
            diffs_cut: 0,
            diffs_cut_text: String::new(),
            waves,
            destroys,
            failed: view
                .failed
                .iter()
                .map(|p| {
                    let context = ProblemContext::new(p).with_way_out(p, spelling);
                    if logs_in_check {
                        context.in_check(&p.reason)
                    } else {
                        context
                    }
                })
                .collect(),
            skipped: view.skipped.iter().map(ProblemContext::new).collect(),
            unresolved: view
                .unresolved
                .iter()
                .map(|p| ProblemContext {
                    ordered_last: view.ordered_last.contains(&p.unit),
                    ..ProblemContext::new(p)
                })
                .collect(),
            locked: view.locked.iter().map(ProblemContext::new).collect(),
            sources: view
                .sources
                .iter()
                .map(|s| SourceContext {
                    url: s.url.clone(),
                    reference: s
                        .reference
                        .clone()
                        .unwrap_or_else(|| "(default branch)".into()),
                    commit: line(&s.commit.chars().take(12).collect::<String>()),
                    units: s.units,
                })
                .collect(),
            other_steps: Vec::new(),
            policies: super::policies::PolicySection::new(&view.policies, &view.policy_edits),
            after_merge: super::after_merge::AfterMergeSection::new(
                &view.merge_mode,
                &line(&view.plan_id),
                spelling,
            ),
        };
        context.place_steps(&view.steps);
        context
    }

    /// Puts each unit's steps in its section: a failed or skipped unit's list item, a
    /// changed unit's block, or else the list of other units' steps; failures first, so
    /// they are the last to lose their place in the comment's budget.
    fn place_steps(&mut self, steps: &[super::steps::UnitSteps]) {
        let mut budget = StepBudget::default();
        for unit in steps {
            let path = line(&unit.unit);
            let contexts = budget.contexts(&unit.steps);
            if let Some(p) = self
                .failed
                .iter_mut()
                .chain(self.skipped.iter_mut())
                .find(|p| p.unit == path)
            {
                p.steps = contexts;
            } else if let Some(u) = self.changed_units.iter_mut().find(|u| u.path == path) {
                u.steps = contexts;
            } else {
                self.other_steps.push(UnitStepsContext {
                    unit: path,
                    steps: contexts,
                });
            }
        }
    }
}

/// The wave of a planned unit; 0 for one the pull request deletes.
fn wave_of(view: &PlanView, path: &str) -> usize {
    view.waves
        .iter()
        .find(|w| w.units.iter().any(|u| u.path == path))
        .map_or(0, |w| w.number)
}

/// "2 resources, 1 output": what a unit's plan changes, resources and outputs apart.
fn changes_text(resources: usize, outputs: usize) -> String {
    match (resources, outputs) {
        (r, 0) => plural(r, "resource"),
        (0, o) => plural(o, "output"),
        (r, o) => format!("{}, {}", plural(r, "resource"), plural(o, "output")),
    }
}

impl UnitContext {
    fn new(unit: &UnitView, wave: usize) -> UnitContext {
        let changes = if unit.no_changes {
            0
        } else {
            unit.resources.len() + unit.outputs.len()
        };
        UnitContext {
            path: line(&unit.path),
            wave,
            counts: unit.counts,
            counts_text: match resource_parts(&unit.counts) {
                parts if parts.is_empty() => "none".into(),
                parts => parts.join(", "),
            },
            resource_count: unit.resources.len(),
            output_count: unit.outputs.len(),
            fingerprint: line(&unit.fingerprint),
            no_changes: unit.no_changes,
            provisional: unit.provisional,
            retried: match unit.retried {
                0 => String::new(),
                n => retried_text(n),
            },
            changes,
            changes_text: changes_text(unit.resources.len(), unit.outputs.len()),
            resource_lines: unit.resources.iter().map(resource_line).collect(),
            output_lines: unit
                .outputs
                .iter()
                .map(|o| change_line(&o.action, &o.name, &[]))
                .collect(),
            diff: String::new(),
            diff_fence: String::new(),
            diff_lines: 0,
            diff_cut: false,
            steps: Vec::new(),
        }
    }

    /// The unit with its rendered plan ready for its block.
    fn with_diff(unit: &UnitView, wave: usize) -> UnitContext {
        let mut context = UnitContext::new(unit, wave);
        if let Some(rendered) = unit.rendered.as_ref().filter(|r| !r.is_empty()) {
            context.diff = diff_text(rendered.text());
            context.diff_fence = fence_for(&context.diff);
            context.diff_lines = context.diff.lines().count();
        }
        context
    }

    /// Characters its rendered plan takes in the comment (0 when it has none).
    pub(super) fn diff_chars(&self) -> usize {
        self.diff.chars().count()
    }

    /// Leaves its rendered plan out; the template then says so.
    pub(super) fn cut_diff(&mut self) {
        self.diff = String::new();
        self.diff_fence = String::new();
        self.diff_cut = true;
    }
}

impl PlanContext {
    /// The units with a rendered plan in the comment.
    pub(super) fn changed_units_mut(&mut self) -> &mut [UnitContext] {
        &mut self.changed_units
    }
}

impl ProblemContext {
    fn new(problem: &Problem) -> ProblemContext {
        let (reason, detail, fence) = reason_parts(&problem.reason);
        ProblemContext {
            unit: line(&problem.unit),
            reason,
            detail,
            fence,
            retried: String::new(),
            see_check: false,
            ordered_last: false,
            steps: Vec::new(),
        }
    }

    /// For a unit whose log is in the check: one line, no block.
    fn in_check(mut self, reason: &str) -> ProblemContext {
        self.reason = failure_line(reason);
        self.detail = String::new();
        self.fence = fence_for("");
        self.see_check = true;
        self
    }

    /// For a unit that failed to plan after retries: how many, and how to try again.
    fn with_way_out(mut self, problem: &Problem, spelling: &Spelling) -> ProblemContext {
        if problem.retried > 0 {
            self.retried = format!(
                "{}; comment `{}` to try again",
                retried_text(problem.retried),
                spelling.command("plan")
            );
        }
        self
    }
}

/// "retried 2×".
fn retried_text(retried: u32) -> String {
    format!("retried {retried}×")
}

/// `+   create  aws_s3_bucket.logs (import)`: symbol, action, address, then any further
/// labels. The symbol comes first so that GitHub's `diff` highlighting colours creates
/// green and deletes (and replaces) red.
fn resource_line(change: &ResourceChange) -> String {
    match change.actions.split_first() {
        Some((first, rest)) => change_line(first, &change.address, rest),
        None => change_line("", &change.address, &[]),
    }
}

fn change_line(action: &str, subject: &str, extra: &[String]) -> String {
    let symbol = match action {
        "create" => "+",
        // `!`, not terraform's `~`: the mark a diff highlighter colours (see `diff.rs`).
        "update" => "!",
        "delete" => "-",
        "replace" => "-/+",
        "read" => "<=",
        "forget" => ".",
        _ => "",
    };
    // A line inside a ```` ```diff ```` block: it starts with a symbol or four spaces, so
    // it cannot close the fence.
    let mut text = format!("{symbol:<3} {:<7} {}", line(action), line(subject));
    if !extra.is_empty() {
        let extra: Vec<String> = extra.iter().map(|e| line(e)).collect();
        text.push_str(&format!(" ({})", extra.join(", ")));
    }
    text
}

/// Text shown on one line, every character visible.
pub(super) fn line(text: &str) -> String {
    visible_line(text).into_owned()
}

pub(super) fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// Splits a reason into its first line (for a code span), the full text when there is more
/// than that line (for a fenced block), and a fence for that block.
pub(super) fn reason_parts(reason: &str) -> (String, String, String) {
    let text = block_text(reason);
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let first = first.trim();
    let shortened = first.chars().count() > ONE_LINE_MAX;
    let mut line: String = first.chars().take(ONE_LINE_MAX).collect();
    if shortened {
        line.push('…');
    }
    let multi_line = text.lines().filter(|l| !l.trim().is_empty()).count() > 1;
    let detail = if shortened || multi_line {
        text.clone()
    } else {
        String::new()
    };
    let fence = fence_for(&detail);
    (visible_line(&line).into_owned(), detail, fence)
}

/// One line saying why a unit failed, when its log is shown elsewhere: the reason's first
/// line, and when that line only opens terraform's error box (`… (exit code 1): ╷`), the
/// first `Error:` line in the box after it. For a code span, at most [`ONE_LINE_MAX`]
/// characters.
pub(super) fn failure_line(reason: &str) -> String {
    let text = block_text(reason);
    let unboxed = |line: &str| {
        line.trim_matches(|c: char| c.is_whitespace() || matches!(c, '╷' | '│' | '╵'))
            .to_string()
    };
    let first = text
        .lines()
        .map(unboxed)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    let error = text
        .lines()
        .map(unboxed)
        .find(|l| l.starts_with("Error:") || l.starts_with("Error "));
    let line = match error {
        Some(error) if !first.contains("Error") => format!("{first} {error}"),
        _ => first,
    };
    let mut short: String = line.chars().take(ONE_LINE_MAX).collect();
    if short.len() < line.len() {
        short.push('…');
    }
    visible_line(&short).into_owned()
}

/// Text for a fenced block: `\r\n` normalised, escape sequences (colours) and control
/// characters other than tab removed, trailing blank lines dropped.
pub(super) fn block_text(text: &str) -> String {
    let text = anstream::adapter::strip_str(&text.replace("\r\n", "\n")).to_string();
    let cleaned: String = text
        .chars()
        .filter(|&c| c == '\n' || c == '\t' || !c.is_control())
        .collect();
    cleaned
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        .trim_matches('\n')
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rc(address: &str, actions: &[&str]) -> ResourceChange {
        ResourceChange {
            address: address.into(),
            actions: actions.iter().map(|a| a.to_string()).collect(),
            forced_by: Vec::new(),
        }
    }

    #[test]
    fn resource_lines_put_the_symbol_first_and_extra_labels_last() {
        assert_eq!(resource_line(&rc("a.b", &["create"])), "+   create  a.b");
        assert_eq!(resource_line(&rc("a.b", &["replace"])), "-/+ replace a.b");
        assert_eq!(resource_line(&rc("d.x", &["read"])), "<=  read    d.x");
        assert_eq!(
            resource_line(&rc("a.b", &["update", "import", "move"])),
            "!   update  a.b (import, move)"
        );
        assert_eq!(resource_line(&rc("a.b", &["import"])), "    import  a.b");
        assert_eq!(resource_line(&rc("a.b\nc", &["move"])), "    move    a.b␊c");
    }

    #[test]
    fn a_multi_line_reason_keeps_its_first_line_inline_and_the_rest_for_a_block() {
        let (line, detail, fence) = reason_parts("\nError: <nil> | boom\n\n  at ```x```\r\n");
        assert_eq!(line, "Error: <nil> | boom");
        assert_eq!(detail, "Error: <nil> | boom\n\n  at ```x```");
        assert_eq!(fence, "````");
        assert_eq!(
            reason_parts("depends on failed a"),
            ("depends on failed a".into(), String::new(), "```".into())
        );
    }

    #[test]
    fn a_long_single_line_reason_is_shortened_and_kept_whole_in_the_detail() {
        let long = "x".repeat(ONE_LINE_MAX + 10);
        let (line, detail, _) = reason_parts(&long);
        assert_eq!(line.chars().count(), ONE_LINE_MAX + 1);
        assert!(line.ends_with('…'));
        assert_eq!(detail, long);
    }

    #[test]
    fn a_failure_line_names_the_error_inside_terraforms_box() {
        let reason = "`terraform plan` failed (exit code 1): ╷\n│ Error: Invalid reference\n│ \n│   on main.tf line 3:\n╵";
        assert_eq!(
            failure_line(reason),
            "`terraform plan` failed (exit code 1): Error: Invalid reference"
        );
        assert_eq!(
            failure_line("generating the stack failed: <x>"),
            "generating the stack failed: <x>"
        );
        assert_eq!(failure_line("Error: a\nError: b"), "Error: a");
    }
}
