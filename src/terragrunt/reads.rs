//! Read sets: which calls read files, which attributes must be evaluated to
//! find every read, and the local module sources a unit runs, followed through
//! `module` blocks in their `.tf` files.

use super::context::Session;
use super::fs::Probe;
use super::limits::MAX_CONFIG_FILE_BYTES;
use super::parse::{HclFile, Names};
use super::paths;
use hcl_edit::expr::Expression;
use hcl_edit::structure::{Attribute, Body};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Functions whose arguments name files the unit reads.
pub const READ_FUNCTIONS: &[&str] = &[
    "find_in_parent_folders",
    "read_terragrunt_config",
    "read_tfvars_file",
    "sops_decrypt_file",
    "mark_as_read",
    "mark_glob_as_read",
    "file",
    "fileexists",
    "fileset",
    "templatefile",
    "filebase64",
    "filemd5",
    "filesha1",
    "filesha256",
    "filesha512",
    "filebase64sha256",
    "filebase64sha512",
];

/// True when `expr` calls a read function anywhere inside it.
pub fn calls_read_function(expr: &Expression) -> bool {
    let mut names = Names::default();
    hcl_edit::visit::Visit::visit_expr(&mut names, expr);
    names
        .functions
        .iter()
        .any(|n| READ_FUNCTIONS.contains(&n.as_str()))
}

/// True when the file calls any read function at all (most files do not,
/// and then nothing beyond the edge expressions needs evaluating).
pub fn file_reads(file: &HclFile) -> bool {
    READ_FUNCTIONS.iter().any(|f| file.calls(f))
}

/// What must be evaluated in one file to find every read: the locals and the
/// attributes (outside `locals` and `include`, anywhere in the body: `inputs`,
/// `generate` contents, hooks) whose value calls a read function. Computed
/// once per file however many units evaluate it.
#[derive(Debug, Default)]
pub struct ReadPlan {
    /// Names of the locals that call a read function, in file order.
    pub locals: Vec<String>,
    /// Each attribute as the positions leading to it: in the body, then in
    /// each nested block's body ([`attribute_at`]).
    pub attributes: Vec<Vec<usize>>,
}

/// The file's [`ReadPlan`], computed on first use.
pub fn read_plan(file: &HclFile) -> &ReadPlan {
    file.read_plan(|body| {
        let mut plan = ReadPlan::default();
        for block in body.get_blocks("locals") {
            for attr in block.body.attributes() {
                if calls_read_function(&attr.value) {
                    plan.locals.push(attr.key.as_str().to_string());
                }
            }
        }
        collect(body, &mut Vec::new(), &mut plan.attributes, true);
        plan
    })
}

fn collect(body: &Body, at: &mut Vec<usize>, out: &mut Vec<Vec<usize>>, top: bool) {
    for (i, structure) in body.iter().enumerate() {
        at.push(i);
        if let Some(attr) = structure.as_attribute() {
            if calls_read_function(&attr.value) {
                out.push(at.clone());
            }
        } else if let Some(block) = structure.as_block() {
            // Locals are forced separately; include paths are evaluated first.
            let skipped =
                top && (block.ident.as_str() == "locals" || block.ident.as_str() == "include");
            if !skipped {
                collect(&block.body, at, out, false);
            }
        }
        at.pop();
    }
}

/// The attribute at `path` (positions as in [`ReadPlan::attributes`]).
pub fn attribute_at<'b>(body: &'b Body, path: &[usize]) -> Option<&'b Attribute> {
    let (last, blocks) = path.split_last()?;
    let mut body = body;
    for &i in blocks {
        body = &body.get(i)?.as_block()?.body;
    }
    body.get(*last)?.as_attribute()
}

/// What a local module at a directory reads.
#[derive(Debug, Default)]
pub struct ModuleDirs {
    /// Every module directory, the first one included.
    pub dirs: Vec<String>,
    /// Module calls whose source leads through a link out of the repository:
    /// the file and line of each.
    pub escaping: Vec<(String, Option<u32>)>,
}

/// The local module calls of one directory's own `.tf` files.
#[derive(Debug, Default)]
pub struct ModuleCalls {
    dirs: Vec<String>,
    escaping: Vec<(String, Option<u32>)>,
}

/// Every directory a local module at `dir` reads: itself, and recursively each
/// local `module { source = "./…" | "../…" }` its `.tf` files call. Remote
/// module sources contribute nothing. Memoised per directory for the run, and
/// each directory's own calls are read once however many modules reach it.
pub fn module_dirs(s: &Session, dir: &str) -> Arc<ModuleDirs> {
    s.modules.get_or(&dir.to_string(), || {
        let mut seen = BTreeSet::new();
        let mut escaping = Vec::new();
        let mut pending = vec![dir.to_string()];
        while let Some(d) = pending.pop() {
            // Past the deadline the caller's unit is unresolved anyway; stop here.
            if s.deadline.is_some_and(|at| std::time::Instant::now() >= at) {
                break;
            }
            if !seen.insert(d.clone()) {
                continue;
            }
            let calls = module_calls(s, &d);
            pending.extend(calls.dirs.iter().cloned());
            escaping.extend(calls.escaping.iter().cloned());
        }
        Arc::new(ModuleDirs {
            dirs: seen.into_iter().collect(),
            escaping,
        })
    })
}

/// The local module directories the `.tf` files directly inside `dir` call.
fn module_calls(s: &Session, dir: &str) -> Arc<ModuleCalls> {
    s.module_calls.get_or(&dir.to_string(), || {
        let mut calls = ModuleCalls::default();
        for file in s.fs.files_in(dir) {
            if !file.ends_with(".tf") && !file.ends_with(".tofu") {
                continue;
            }
            // A module file that does not parse is terraform's to report at plan time.
            let Ok(text) = s.fs.read_text(&file, MAX_CONFIG_FILE_BYTES) else {
                continue;
            };
            let Ok(parsed) = HclFile::parse(&file, &text) else {
                continue;
            };
            for block in parsed.body.get_blocks("module") {
                let Some(attr) = block.body.get_attribute("source") else {
                    continue;
                };
                let Some(source) = attr.value.as_str() else {
                    continue;
                };
                if !is_local_source(source) {
                    continue;
                }
                let Ok(target) = s.resolve(dir, source) else {
                    continue;
                };
                if s.fs.probe(&target) == Probe::Escapes {
                    calls
                        .escaping
                        .push((file.clone(), parsed.line_of(hcl_edit::Span::span(attr))));
                } else {
                    calls.dirs.push(target);
                }
            }
        }
        Arc::new(calls)
    })
}

/// A local module source, by Terraform's rule: a path starting with `./` or
/// `../` (or an absolute path). Anything else is a registry address, a
/// go-getter URL or a VCS shorthand, even with a `//subdirectory`.
pub fn is_local_source(source: &str) -> bool {
    source.starts_with("./")
        || source.starts_with("../")
        || source == "."
        || source == ".."
        || source.starts_with('/')
}

/// Splits a Terragrunt source into (module root, subdirectory) on the `//`
/// that is not part of `://`, and drops any `?ref=` query.
pub fn split_source(source: &str) -> (&str, &str) {
    super::remote_source::split_subdir(source.split('?').next().unwrap_or(source))
}

/// The repo-relative module directory of a local `terraform.source`, and the
/// root directory Terragrunt copies (the part before `//`).
pub fn local_source_dirs(
    s: &Session,
    unit_dir: &str,
    source: &str,
) -> Option<Result<(String, String), String>> {
    let (root, sub) = split_source(source);
    if !is_local_source(source) && !is_existing_relative_dir(s, unit_dir, root) {
        return None;
    }
    let root = match s.resolve(unit_dir, root) {
        Ok(r) => r,
        Err(e) => return Some(Err(e)),
    };
    let module = if sub.is_empty() {
        root.clone()
    } else {
        paths::clean(&paths::join(&root, sub)).unwrap_or(root.clone())
    };
    Some(Ok((root, module)))
}

/// Terragrunt hands `terraform.source` to go-getter, which takes a plain
/// relative path (`modules/vpc`) for a local directory when there is one.
fn is_existing_relative_dir(s: &Session, unit_dir: &str, root: &str) -> bool {
    let plain = !root.is_empty()
        && !root.contains("::")
        && !root.contains("://")
        && !root.starts_with("git@")
        && !root.contains('?');
    plain
        && s.resolve(unit_dir, root)
            .is_ok_and(|dir| s.fs.probe(&dir) == Probe::Dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_sources() {
        assert!(is_local_source("../modules/vpc"));
        assert!(is_local_source("/abs/modules/vpc"));
        assert!(is_local_source("."));
        assert!(!is_local_source("git::git@github.com:org/repo?ref=v1"));
        assert!(!is_local_source("github.com/org/repo//sub"));
        assert!(!is_local_source(
            "tfr:///terraform-aws-modules/vpc/aws?version=5.0.0"
        ));
        assert!(!is_local_source("terraform-aws-modules/vpc/aws"));
        assert!(!is_local_source(
            "terraform-aws-modules/security-group/aws//modules/http-80"
        ));
        assert!(!is_local_source("app.terraform.io/acme/vpc/aws"));
        assert!(!is_local_source("https://example.com/x.zip"));
    }

    #[test]
    fn splits_double_slash() {
        assert_eq!(split_source("../modules//vpc"), ("../modules", "vpc"));
        assert_eq!(split_source("/r/modules//vpc?ref=x"), ("/r/modules", "vpc"));
        assert_eq!(
            split_source("git::https://h/x.git//sub"),
            ("git::https://h/x.git", "sub")
        );
        assert_eq!(split_source("../m"), ("../m", ""));
    }
}
