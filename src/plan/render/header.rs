//! The lines above a resource's attributes: `# aws_instance.web will be updated in-place`,
//! the reason notes (`# (because … is not in configuration)`), moves and imports, and the
//! `~ resource "aws_instance" "web" {` line with the plan's own action symbol.
//!
//! Names, addresses and import ids come from the plan, so every one of them goes through
//! [`visible`] before it is written.

use super::super::show_json::{Action, ResourceEntry, present};
use super::strings::visible;
use serde_json::Value;

/// The symbol terraform draws for a resource's action.
pub(super) fn symbol(action: Action) -> &'static str {
    match action {
        Action::NoOp => "   ",
        Action::Create => "  +",
        Action::Update => "  ~",
        Action::Delete => "  -",
        Action::DeleteThenCreate => "-/+",
        Action::CreateThenDelete => "+/-",
        Action::Read => " <=",
        Action::Forget => " .",
        Action::CreateThenForget => " +/.",
    }
}

/// `resource "type" "name"` or `data "type" "name"`.
pub(super) fn declaration(entry: &ResourceEntry<'_>) -> String {
    let mode = if text(entry, "mode") == "managed" {
        "resource"
    } else {
        "data"
    };
    format!(
        "{mode} \"{}\" \"{}\"",
        visible(text(entry, "type")),
        visible(text(entry, "name"))
    )
}

/// True when terraform shows nothing for this entry: a no-op that neither moves nor
/// imports, or a data source being deleted.
pub(super) fn hidden(entry: &ResourceEntry<'_>) -> bool {
    match entry.action {
        Action::NoOp => !moved(entry) && !importing(entry),
        Action::Delete => text(entry, "mode") != "managed",
        _ => false,
    }
}

fn moved(entry: &ResourceEntry<'_>) -> bool {
    let previous = text(entry, "previous_address");
    !previous.is_empty() && previous != entry.address
}

/// Whether the resource is being imported.
pub(super) fn importing(entry: &ResourceEntry<'_>) -> bool {
    present(entry.change.get("importing"))
}

/// The comment lines that introduce a resource change.
pub(super) fn comment(entry: &ResourceEntry<'_>) -> Vec<String> {
    let address = visible(entry.address);
    let deposed = text(entry, "deposed");
    let shown = if deposed.is_empty() {
        address.to_string()
    } else {
        format!("{address} (deposed object {})", visible(deposed))
    };
    let reason = text(entry, "action_reason");
    let previous = visible(text(entry, "previous_address")).into_owned();
    let mut lines = Vec::new();
    let mut said_moved = false;
    let mut said_imported = false;
    match entry.action {
        Action::Create => lines.push(format!("  # {shown} will be created")),
        Action::Read => {
            lines.push(format!("  # {shown} will be read during apply"));
            let why = match reason {
                "read_because_config_unknown" => "(config refers to values not yet known)",
                "read_because_dependency_pending" => {
                    "(depends on a resource or a module with changes pending)"
                }
                "read_because_check_nested" => "(config will be reloaded to verify a check block)",
                _ => "",
            };
            if !why.is_empty() {
                lines.push(format!("  # {why}"));
            }
        }
        Action::Update => lines.push(format!("  # {shown} will be updated in-place")),
        Action::DeleteThenCreate | Action::CreateThenDelete => lines.push(match reason {
            "replace_because_tainted" => format!("  # {shown} is tainted, so must be replaced"),
            "replace_by_request" => format!("  # {shown} will be replaced, as requested"),
            "replace_by_triggers" => {
                format!("  # {shown} will be replaced due to changes in replace_triggered_by")
            }
            _ => format!("  # {shown} must be replaced"),
        }),
        Action::CreateThenForget => {
            lines.push(format!(
                " # {shown} must be replaced, but the existing object will not be destroyed"
            ));
            lines.push(" # (destroy = false is set in the configuration)".to_string());
        }
        Action::Forget => {
            if deposed.is_empty() {
                lines.push(format!(
                    " # {shown} will no longer be managed by Terraform, but will not be destroyed"
                ));
            } else {
                lines.push(format!(
                    " # {shown} will be removed from Terraform state, but will not be destroyed"
                ));
                lines.push(
                    " # (left over from a partially-failed replacement of this instance)".into(),
                );
            }
            lines.push(" # (destroy = false is set in the configuration)".to_string());
        }
        Action::Delete => {
            lines.push(format!("  # {shown} will be destroyed"));
            if let Some(why) = delete_reason(entry, reason, &previous) {
                lines.push(format!("  # {why}"));
            }
            if !deposed.is_empty() {
                lines.push(
                    "  # (left over from a partially-failed replacement of this instance)".into(),
                );
            }
        }
        Action::NoOp => {
            if moved(entry) {
                lines.push(format!("  # {previous} has moved to {shown}"));
                said_moved = true;
            } else if importing(entry) {
                lines.push(format!("  # {shown} will be imported"));
                if present(entry.change.get("generated_config")) {
                    lines.push("  # (config will be generated)".to_string());
                }
                said_imported = true;
            }
        }
    }
    if moved(entry) && !said_moved {
        lines.push(format!("  # (moved from {previous})"));
    }
    if importing(entry) && !said_imported {
        let id = entry
            .change
            .get("importing")
            .and_then(|i| i.get("id"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        if id.is_empty() {
            lines.push("  # (will be imported first)".to_string());
        } else {
            lines.push(format!("  # (imported from \"{}\")", visible(id)));
        }
    }
    if importing(entry)
        && matches!(
            entry.action,
            Action::DeleteThenCreate | Action::CreateThenDelete
        )
    {
        lines.push("  # Warning: this will destroy the imported resource".to_string());
    }
    lines
}

fn delete_reason(entry: &ResourceEntry<'_>, reason: &str, previous: &str) -> Option<String> {
    let index = entry.entry.get("index").unwrap_or(&Value::Null);
    Some(match reason {
        "delete_because_no_resource_config" => format!(
            "(because {}.{} is not in configuration)",
            visible(text(entry, "type")),
            visible(text(entry, "name"))
        ),
        "delete_because_no_move_target" => format!(
            "(because {previous} was moved to {}, which is not in configuration)",
            visible(entry.address)
        ),
        "delete_because_no_module" => format!(
            "(because {} is not in configuration)",
            visible(text(entry, "module_address"))
        ),
        "delete_because_wrong_repetition" => match index {
            Value::Number(_) => "(because resource does not use count)".to_string(),
            Value::String(_) => "(because resource does not use for_each)".to_string(),
            _ => "(because resource uses count or for_each)".to_string(),
        },
        "delete_because_count_index" => {
            format!(
                "(because index [{}] is out of range for count)",
                visible(&index.to_string())
            )
        }
        "delete_because_each_key" => {
            format!(
                "(because key [{}] is not in for_each map)",
                visible(&index.to_string())
            )
        }
        _ => return None,
    })
}

/// A string field of the entry; empty when missing or not a string.
fn text<'a>(entry: &ResourceEntry<'a>, key: &str) -> &'a str {
    entry
        .entry
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
}
