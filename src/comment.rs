//! The pull-request comment: rendering a plan or an apply result to Markdown, and cutting it
//! into comment bodies that fit the forge's size limit.
//!
//! This module owns the comment's view model ([`PlanView`], [`ApplyView`]), the built-in
//! Handlebars templates (`templates/plan.md.hbs`, `templates/apply.md.hbs`, compiled into the
//! binary), a repo's overrides of them, the hidden marker that lets cascade find its own
//! comments again, the splitter, and the cap on the number of comments. It never talks to a
//! forge, never reads a plan file or plan JSON: the only values it shows are in each unit's
//! rendered plan, which `plan::render` masked and redacted before it got here.
//!
//! Templates run in strict mode (a misspelt field is an error, not an empty string). Text from
//! a pull request is inert in every comment (`crate::inert`): a plain `{{field}}` prints escaped
//! Markdown text with mentions and references broken, and the helpers `code`, `cell`,
//! `html_code` and `fenced` place it in code; the render context hands it over raw, on one
//! line (see `view.rs`). The apply template may include the plan template as the partial
//! `plan`, which is how a changed plan is shown inside an apply result.
//!
//! Every comment body starts with a marker line ([`PLAN_MARKER`], [`APPLY_MARKER`]), added
//! here rather than by the template so an override cannot lose it. A body longer than the
//! limit is cut into parts at top-level block boundaries, never inside a code fence or a
//! `<details>` block (the rules are in `split.rs`); continuation parts carry
//! `<!-- cascade:plan part k/n -->` and say "(continued, part k of n)". At most
//! [`MAX_COMMENTS`] parts are posted: past that, rendered plans are left out, largest first,
//! each with a line saying so (`fit.rs`).

mod after_merge;
mod apply_context;
mod check;
mod diff;
mod fit;
mod policies;
mod records;
mod risk;
mod since;
mod split;
mod steps;
mod view;

pub use after_merge::MergeModeView;
pub use check::{failure_logs_text, step_outputs_text};
pub use policies::{PolicyView, WHOLE_PLAN, plan_policy_views, policy_views};
pub use records::{apply_view, plan_view, sources_of, totals};
pub use steps::{COMMENT_STEPS, STEP_SHOWN, StepView, UnitSteps, steps_markdown, unit_steps};
pub use view::{
    ApplyOutcome, ApplyStatus, ApplyUnitView, ApplyView, ChangeView, PlanView, Problem, SourceView,
    UnitView, WaveView,
};

use crate::forge::Spelling;
use apply_context::ApplyContext;
use fit::{Layout, fit};
use handlebars::{Handlebars, RenderErrorReason};
use std::path::Path;
use view::PlanContext;

/// The most comments one plan or apply result takes: the first and at most ten more.
pub const MAX_COMMENTS: usize = 11;

/// First line of the plan comment; continuation parts use `<!-- cascade:plan part k/n -->`.
pub const PLAN_MARKER: &str = "<!-- cascade:plan -->";

/// First line of an apply result comment; continuations as for [`PLAN_MARKER`].
pub const APPLY_MARKER: &str = "<!-- cascade:apply -->";

/// File name of the plan template, built in and in a repo's override directory.
pub const PLAN_TEMPLATE_FILE: &str = "plan.md.hbs";

/// File name of the apply template, built in and in a repo's override directory.
pub const APPLY_TEMPLATE_FILE: &str = "apply.md.hbs";

const BUILTIN_PLAN: &str = include_str!("../templates/plan.md.hbs");
const BUILTIN_APPLY: &str = include_str!("../templates/apply.md.hbs");

/// Override templates larger than this are refused; the built-ins are a few kilobytes.
const MAX_TEMPLATE_BYTES: u64 = 256 * 1024;

/// The smallest share of a part left for content once the marker and part notes are in.
const MIN_CONTENT: usize = 200;

/// Why a comment could not be produced.
#[derive(Debug, thiserror::Error)]
pub enum CommentError {
    /// A template does not parse, or fails to render (strict mode: a field that does not
    /// exist). `file` is the template's path; line and column are Handlebars's, 1-based.
    #[error("{file}{}: {message}", position(.line, .column))]
    Template {
        file: String,
        line: Option<usize>,
        column: Option<usize>,
        message: String,
    },
    /// An override template could not be read, or is not a regular file.
    #[error("{file}: {message}")]
    Read { file: String, message: String },
    /// The limit leaves no room for content next to the marker and part notes.
    #[error("a comment limit of {limit} characters is too small; cascade needs at least {minimum}")]
    LimitTooSmall { limit: usize, minimum: usize },
    /// A single line (a unit path, say) is longer than a whole comment may be.
    #[error("the comment cannot be split into parts of {limit} characters: {reason}")]
    Unsplittable { limit: usize, reason: String },
}

fn position(line: &Option<usize>, column: &Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(":{l}:{c}"),
        (Some(l), None) => format!(":{l}"),
        _ => String::new(),
    }
}

/// Which of cascade's comments a body is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommentKind {
    /// The PR's plan comment, edited in place.
    Plan,
    /// The result of an `/apply`.
    Apply,
}

impl CommentKind {
    fn name(self) -> &'static str {
        match self {
            CommentKind::Plan => "plan",
            CommentKind::Apply => "apply",
        }
    }

    /// The marker line of part `part` of `parts`.
    fn marker(self, part: usize, parts: usize) -> String {
        if part <= 1 {
            format!("<!-- cascade:{} -->", self.name())
        } else {
            format!("<!-- cascade:{} part {part}/{parts} -->", self.name())
        }
    }
}

/// What a comment's marker line says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Marker {
    /// Plan or apply result.
    pub kind: CommentKind,
    /// 1 for the first (or only) part.
    pub part: usize,
    /// Number of parts, known from continuation markers only.
    pub parts: Option<usize>,
}

/// Reads the marker on the first line of a comment body; `None` for anything that is not
/// one of cascade's comments.
pub fn parse_marker(body: &str) -> Option<Marker> {
    let first = body.lines().next()?.trim();
    let inner = first.strip_prefix("<!-- cascade:")?.strip_suffix(" -->")?;
    let (name, rest) = inner.split_once(' ').unwrap_or((inner, ""));
    let kind = match name {
        "plan" => CommentKind::Plan,
        "apply" => CommentKind::Apply,
        _ => return None,
    };
    if rest.is_empty() {
        return Some(Marker {
            kind,
            part: 1,
            parts: None,
        });
    }
    let (part, parts) = rest.strip_prefix("part ")?.split_once('/')?;
    let (part, parts) = (part.parse().ok()?, parts.parse().ok()?);
    (1 <= part && part <= parts).then_some(Marker {
        kind,
        part,
        parts: Some(parts),
    })
}

/// The comment renderer: the two templates, built in or overridden by a repo, and how
/// the forge the comment goes to spells commands and change requests.
pub struct Comments {
    registry: Handlebars<'static>,
    /// Where each template came from, for error messages: (plan, apply).
    files: [String; 2],
    spelling: Spelling,
    /// Failed units' logs are in the forge's check (GitHub's check run): the comment
    /// gives each failed unit one line and points there.
    logs_in_check: bool,
}

impl Default for Comments {
    fn default() -> Self {
        Comments::new()
    }
}

impl Comments {
    /// The built-in templates.
    pub fn new() -> Comments {
        Comments::from_sources([
            (
                format!("templates/{PLAN_TEMPLATE_FILE}"),
                BUILTIN_PLAN.to_string(),
            ),
            (
                format!("templates/{APPLY_TEMPLATE_FILE}"),
                BUILTIN_APPLY.to_string(),
            ),
        ])
        .expect("the built-in templates parse (tested)")
    }

    /// The built-in templates, each replaced by `plan.md.hbs` / `apply.md.hbs` from `dir`
    /// when that file exists there (a missing directory means no overrides). Symlinks are
    /// refused, so a template cannot pull in a file from outside the checkout; the caller
    /// makes sure `dir` itself lies inside it.
    pub fn with_overrides(dir: &Path) -> Result<Comments, CommentError> {
        let plan = read_override(dir, PLAN_TEMPLATE_FILE)?;
        let apply = read_override(dir, APPLY_TEMPLATE_FILE)?;
        Comments::from_sources([
            plan.unwrap_or_else(|| {
                let file = format!("templates/{PLAN_TEMPLATE_FILE}");
                (file, BUILTIN_PLAN.to_string())
            }),
            apply.unwrap_or_else(|| {
                let file = format!("templates/{APPLY_TEMPLATE_FILE}");
                (file, BUILTIN_APPLY.to_string())
            }),
        ])
    }

    fn from_sources([plan, apply]: [(String, String); 2]) -> Result<Comments, CommentError> {
        let mut registry = Handlebars::new();
        registry.set_strict_mode(true);
        crate::inert::register(&mut registry);
        for (name, (file, source)) in [("plan", &plan), ("apply", &apply)] {
            registry
                .register_template_string(name, source)
                .map_err(|e| {
                    let (line, column) = e.pos().unzip();
                    CommentError::Template {
                        file: file.clone(),
                        line,
                        column,
                        message: e.reason().to_string(),
                    }
                })?;
        }
        Ok(Comments {
            registry,
            files: [plan.0, apply.0],
            spelling: Spelling::GITHUB,
            logs_in_check: false,
        })
    }

    /// The same templates, given commands and change requests as `spelling` writes them
    /// (`command_prefix` and `change_request` in the context; GitHub's unless set).
    pub fn spelled(mut self, spelling: &Spelling) -> Comments {
        self.spelling = *spelling;
        self
    }

    /// The same templates for a forge whose check shows the failed units' logs
    /// ([`failure_logs_text`]): a unit that failed gets one line, its reason, and
    /// "details in the `cascade` check" (`see_check` in the context) instead of a block
    /// with the whole message. Off unless set: `cascade plan` and GitLab keep the block.
    pub fn logs_in_check(mut self, yes: bool) -> Comments {
        self.logs_in_check = yes;
        self
    }

    /// The plan comment: one body, or several when it is longer than `limit` characters
    /// (each then at most `limit`), at most [`MAX_COMMENTS`]. Every body starts with the plan
    /// marker.
    pub fn plan_comment(&self, view: &PlanView, limit: usize) -> Result<Vec<String>, CommentError> {
        self.plan_comment_within(view, limit, MAX_COMMENTS)
    }

    /// [`Comments::plan_comment`] in at most `max_comments` bodies (`usize::MAX`: as many as
    /// it takes, as `cascade plan` prints it). Past the cap, units' rendered plans are left
    /// out, largest first, each with a line saying so.
    pub fn plan_comment_within(
        &self,
        view: &PlanView,
        limit: usize,
        max_comments: usize,
    ) -> Result<Vec<String>, CommentError> {
        let layout = Layout {
            limit,
            kind: CommentKind::Plan,
            max_comments,
        };
        let render = |context: &PlanContext| self.render("plan", context);
        fit(
            &mut PlanContext::new(view, &self.spelling, self.logs_in_check),
            |c| Some(c),
            &render,
            &layout,
        )
    }

    /// The apply result comment, split and capped like [`Comments::plan_comment`]. When the
    /// plan changed since approval, the new plan (with its new id) is part of it.
    pub fn apply_comment(
        &self,
        view: &ApplyView,
        limit: usize,
    ) -> Result<Vec<String>, CommentError> {
        self.apply_comment_within(view, limit, MAX_COMMENTS)
    }

    /// [`Comments::apply_comment`] in at most `max_comments` bodies, as
    /// [`Comments::plan_comment_within`].
    pub fn apply_comment_within(
        &self,
        view: &ApplyView,
        limit: usize,
        max_comments: usize,
    ) -> Result<Vec<String>, CommentError> {
        let layout = Layout {
            limit,
            kind: CommentKind::Apply,
            max_comments,
        };
        let render = |context: &ApplyContext| self.render("apply", context);
        fit(
            &mut ApplyContext::new(view, &self.spelling, self.logs_in_check),
            ApplyContext::new_plan_mut,
            &render,
            &layout,
        )
    }

    fn render<T: serde::Serialize>(&self, name: &str, context: &T) -> Result<String, CommentError> {
        self.registry.render(name, context).map_err(|e| {
            // An error inside the `plan` partial belongs to the plan template's file.
            let file = match e.template_name.as_deref().unwrap_or(name) {
                "plan" => &self.files[0],
                _ => &self.files[1],
            };
            let message = match e.reason() {
                RenderErrorReason::MissingVariable(Some(name)) => format!(
                    "`{name}` is not in the template's context \
                     (the built-in template's header comment lists the fields)"
                ),
                reason => reason.to_string(),
            };
            CommentError::Template {
                file: file.clone(),
                line: e.line_no,
                column: e.column_no,
                message,
            }
        })
    }
}

/// Reads `dir/file` if it exists: `Some((display path, source))`.
fn read_override(dir: &Path, file: &str) -> Result<Option<(String, String)>, CommentError> {
    let path = dir.join(file);
    let shown = path.display().to_string();
    let refuse = |message: String| CommentError::Read {
        file: shown.clone(),
        message,
    };
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(refuse(e.to_string())),
    };
    if !meta.file_type().is_file() {
        return Err(refuse(
            "is not a regular file (symlinks are not followed); commit the template itself".into(),
        ));
    }
    if meta.len() > MAX_TEMPLATE_BYTES {
        return Err(refuse(format!(
            "is {} bytes; a comment template may be at most {MAX_TEMPLATE_BYTES}",
            meta.len()
        )));
    }
    let source = std::fs::read_to_string(&path).map_err(|e| refuse(e.to_string()))?;
    Ok(Some((shown, source)))
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

fn continued_note(part: usize, parts: usize) -> String {
    format!("*(continued, part {part} of {parts})*")
}

fn next_note(next: usize, parts: usize) -> String {
    format!("*Continued in the next comment (part {next} of {parts}).*")
}

/// Adds the marker, and the part notes when there are several parts.
fn frame(kind: CommentKind, part: usize, parts: usize, content: &str) -> String {
    let mut out = kind.marker(part, parts);
    out.push('\n');
    if part > 1 {
        out.push_str(&continued_note(part, parts));
        out.push_str("\n\n");
    }
    out.push_str(content);
    if part < parts {
        out.push_str("\n\n");
        out.push_str(&next_note(part + 1, parts));
    }
    out
}

/// The marker and notes of the longest possible part, given that there are at most
/// `max_parts` parts.
fn frame_overhead(kind: CommentKind, max_parts: usize) -> usize {
    let n = 10usize.pow(max_parts.to_string().len() as u32) - 1;
    chars(&frame(kind, n - 1, n, ""))
}

/// `body` tidied and cut into the contents of parts: one when it fits `limit` with its
/// marker, else several that each fit `limit` with their marker, part notes and `reserve`
/// more characters (the note a capped comment may append to its last part).
fn pieces(
    body: &str,
    limit: usize,
    kind: CommentKind,
    reserve: usize,
) -> Result<Vec<String>, CommentError> {
    let body = split::tidy(body);
    if chars(&frame(kind, 1, 1, &body)) <= limit {
        return Ok(vec![body]);
    }
    let overhead = frame_overhead(kind, chars(&body).max(2)) + reserve;
    let minimum = overhead + MIN_CONTENT;
    if limit < minimum {
        return Err(CommentError::LimitTooSmall { limit, minimum });
    }
    split::split(&body, limit - overhead).map_err(|e| CommentError::Unsplittable {
        limit,
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_round_trip() {
        for (kind, part, parts) in [(CommentKind::Plan, 1, 1), (CommentKind::Apply, 3, 12)] {
            let body = frame(kind, part, parts, "x");
            let marker = parse_marker(&body).unwrap();
            assert_eq!((marker.kind, marker.part), (kind, part));
            assert_eq!(marker.parts, (part > 1).then_some(parts));
        }
        assert_eq!(parse_marker("<!-- cascade:plan part 4/3 -->"), None);
        assert_eq!(parse_marker("<!-- cascade:other -->"), None);
        assert_eq!(parse_marker("hello\n<!-- cascade:plan -->"), None);
    }

    #[test]
    fn the_overhead_covers_every_part() {
        let overhead = frame_overhead(CommentKind::Plan, 120);
        for (part, parts) in [(1, 2), (2, 2), (57, 120), (119, 120)] {
            assert!(chars(&frame(CommentKind::Plan, part, parts, "")) <= overhead);
        }
    }

    #[test]
    fn a_body_that_fits_is_one_part() {
        let parts = pieces("hello\n\n\n\nworld\n", 100, CommentKind::Plan, 50).unwrap();
        assert_eq!(parts, ["hello\n\nworld"]);
    }

    #[test]
    fn a_limit_too_small_for_the_frame_is_an_error() {
        let body = "word ".repeat(100);
        let err = pieces(&body, 120, CommentKind::Plan, 0).unwrap_err();
        assert!(matches!(
            err,
            CommentError::LimitTooSmall { limit: 120, .. }
        ));
    }

    #[test]
    fn the_built_in_templates_parse() {
        let _ = Comments::new();
    }
}
