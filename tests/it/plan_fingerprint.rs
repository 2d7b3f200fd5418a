//! Plan summaries and fingerprints of real `terraform show -json` documents.
//!
//! Every document here is made at test time by the `terraform` on PATH, from configurations
//! that use only the built-in `terraform_data` resource and `terraform_remote_state` data
//! source, so nothing is downloaded. The tests fail, never skip, without terraform. The plan
//! JSON is held in memory, as cascade does; only the binary plan file touches the disk.

use crate::support::terraform::terraform;
use cascade::plan::{Fingerprint, PlanId, PlanSummary};
use cascade::unit::UnitPath;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::Path;

/// A terraform working directory in a temporary directory, initialised.
struct Workdir {
    dir: tempfile::TempDir,
    config: String,
}

impl Workdir {
    fn new(main_tf: &str) -> Workdir {
        let mut workdir = Workdir {
            dir: tempfile::tempdir().unwrap(),
            config: String::new(),
        };
        workdir.write(main_tf);
        terraform(workdir.path(), &["init", "-input=false", "-no-color"]);
        workdir
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Replaces the configuration.
    fn write(&mut self, main_tf: &str) {
        std::fs::write(self.path().join("main.tf"), main_tf).unwrap();
        self.config = main_tf.to_string();
    }

    /// Plans into the plan file `p` and returns `terraform show -json p`.
    fn plan_json(&self, vars: &[(&str, &str)]) -> Vec<u8> {
        let mut args = vec![
            "plan".to_string(),
            "-input=false".into(),
            "-no-color".into(),
            "-out=p".into(),
        ];
        args.extend(vars.iter().map(|(k, v)| format!("-var={k}={v}")));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        terraform(self.path(), &args);
        terraform(self.path(), &["show", "-json", "p"])
    }

    fn plan(&self, vars: &[(&str, &str)]) -> PlanSummary {
        PlanSummary::from_show_json(&self.plan_json(vars)).expect("a real plan is summarised")
    }

    /// Plans and applies the saved plan, as cascade does.
    fn apply(&self, vars: &[(&str, &str)]) {
        self.plan_json(vars);
        terraform(
            self.path(),
            &["apply", "-input=false", "-no-color", "-auto-approve", "p"],
        );
    }
}

/// Counts, labels and outputs: what the comment shows. Fingerprints of applied state hold
/// random ids, so they are compared in tests rather than snapshotted.
fn shown(summary: &PlanSummary) -> Value {
    json!({
        "counts": summary.counts,
        "resources": summary.resources,
        "outputs": summary.outputs,
        "is_empty": summary.is_empty(),
    })
}

macro_rules! assert_plan_snapshot {
    ($name:literal, $workdir:expr, $summary:expr) => {
        insta::with_settings!({ description => $workdir.config.clone(), omit_expression => true }, {
            insta::assert_json_snapshot!($name, shown(&$summary));
        })
    };
}

const APP: &str = r#"
variable "name" {
  type    = string
  default = "one"
}
variable "generation" {
  type    = string
  default = "1"
}

resource "terraform_data" "app" {
  input = var.name
}

resource "terraform_data" "server" {
  input            = "server"
  triggers_replace = [var.generation]
}

resource "terraform_data" "blue" {
  input            = "blue"
  triggers_replace = [var.generation]
  lifecycle {
    create_before_destroy = true
  }
}

output "app" {
  value = terraform_data.app.output
}
"#;

#[test]
fn create() {
    let w = Workdir::new(APP);
    let s = w.plan(&[]);
    assert_eq!(s.counts.add, 3);
    assert!(!s.is_empty());
    assert_ne!(s.fingerprint, Fingerprint::empty());
    assert_plan_snapshot!("plan_create", w, s);
}

#[test]
fn update() {
    let w = Workdir::new(APP);
    w.apply(&[]);
    let s = w.plan(&[("name", "two")]);
    assert_eq!(s.counts.change, 1);
    assert_plan_snapshot!("plan_update", w, s);
}

#[test]
fn replace_counts_once_whichever_order() {
    let w = Workdir::new(APP);
    w.apply(&[]);
    let s = w.plan(&[("generation", "2")]);
    // server is deleted then created, blue (create_before_destroy) created then deleted.
    assert_eq!(s.counts.replace, 2);
    assert_eq!((s.counts.add, s.counts.destroy), (0, 0));
    assert_plan_snapshot!("plan_replace", w, s);
}

#[test]
fn delete() {
    let mut w = Workdir::new(APP);
    w.apply(&[]);
    w.write(
        r#"
resource "terraform_data" "app" {
  input = "one"
}

output "app" {
  value = terraform_data.app.output
}
"#,
    );
    let s = w.plan(&[]);
    assert_eq!(s.counts.destroy, 2);
    assert_plan_snapshot!("plan_delete", w, s);
}

#[test]
fn output_only_change_is_not_empty() {
    let config = r#"
variable "greeting" {
  type    = string
  default = "hello"
}

resource "terraform_data" "app" {
  input = "app"
}

output "greeting" {
  value = var.greeting
}
"#;
    let w = Workdir::new(config);
    w.apply(&[]);
    let s = w.plan(&[("greeting", "goodbye")]);
    assert_eq!(s.counts, Default::default());
    assert!(s.resources.is_empty());
    assert!(!s.is_empty(), "an output change needs approval");
    assert_ne!(s.fingerprint, Fingerprint::empty());
    assert_plan_snapshot!("plan_output_only", w, s);
}

#[test]
fn moved_blocks() {
    let mut w = Workdir::new(APP);
    w.apply(&[]);
    w.write(
        r#"
resource "terraform_data" "application" {
  input = "one"
}

moved {
  from = terraform_data.app
  to   = terraform_data.application
}

resource "terraform_data" "web" {
  input            = "server, renamed and changed"
  triggers_replace = ["1"]
}

moved {
  from = terraform_data.server
  to   = terraform_data.web
}

resource "terraform_data" "blue" {
  input            = "blue"
  triggers_replace = ["1"]
  lifecycle {
    create_before_destroy = true
  }
}

output "app" {
  value = terraform_data.application.output
}
"#,
    );
    let s = w.plan(&[]);
    assert_eq!(s.counts.moved, 2);
    assert_eq!(s.counts.change, 1);
    assert!(!s.is_empty(), "a move needs approval");
    assert_plan_snapshot!("plan_moved", w, s);
}

#[test]
fn import_blocks() {
    // terraform_data accepts any import id, so no remote object is needed.
    let w = Workdir::new(
        r#"
import {
  to = terraform_data.adopted
  id = "existing-1"
}

resource "terraform_data" "adopted" {
}

import {
  to = terraform_data.adopted_and_changed
  id = "existing-2"
}

resource "terraform_data" "adopted_and_changed" {
  input = "new value"
}
"#,
    );
    let s = w.plan(&[]);
    assert_eq!(s.counts.import, 2);
    assert_eq!(s.counts.change, 1);
    assert!(!s.is_empty(), "an import needs approval");
    assert_plan_snapshot!("plan_import", w, s);
}

#[test]
fn removed_blocks_forget() {
    let mut w = Workdir::new(APP);
    w.apply(&[]);
    w.write(
        r#"
resource "terraform_data" "app" {
  input = "one"
}

removed {
  from = terraform_data.server
  lifecycle {
    destroy = false
  }
}

removed {
  from = terraform_data.blue
  lifecycle {
    destroy = false
  }
}

output "app" {
  value = terraform_data.app.output
}
"#,
    );
    let s = w.plan(&[]);
    assert_eq!(s.counts.forget, 2);
    assert_eq!(s.counts.destroy, 0);
    assert_plan_snapshot!("plan_forget", w, s);
}

#[test]
fn data_source_read_during_apply() {
    // The data source's config is unknown until terraform_data.path exists.
    let w = Workdir::new(
        r#"
resource "terraform_data" "path" {
  input = "upstream.tfstate"
}

data "terraform_remote_state" "upstream" {
  backend = "local"
  config = {
    path = terraform_data.path.output
  }
}
"#,
    );
    let s = w.plan(&[]);
    assert_eq!(s.counts.read, 1);
    assert_plan_snapshot!("plan_read", w, s);
}

#[test]
fn no_changes() {
    let w = Workdir::new(APP);
    w.apply(&[]);
    let s = w.plan(&[]);
    assert!(s.is_empty());
    assert_eq!(s.counts, Default::default());
    assert_eq!(s.fingerprint, Fingerprint::empty());
    let units = [(UnitPath::new("live/app"), s.fingerprint.clone())];
    assert_eq!(
        PlanId::compute("headsha", "basesha", &units).as_str(),
        PlanId::NO_CHANGES
    );
    // One unit with changes makes the id a real digest.
    let changing = Workdir::new(APP).plan(&[]);
    let units = [
        (UnitPath::new("live/app"), s.fingerprint.clone()),
        (UnitPath::new("live/db"), changing.fingerprint),
    ];
    assert_ne!(
        PlanId::compute("headsha", "basesha", &units).as_str(),
        PlanId::NO_CHANGES
    );
}

#[test]
fn empty_configuration_has_no_changes() {
    let w = Workdir::new("");
    let s = w.plan(&[]);
    assert!(s.is_empty());
    assert_eq!(s.fingerprint, Fingerprint::empty());
}

#[test]
fn empty_fingerprint_is_pinned() {
    let document = r#"{"output_changes":[],"resource_changes":[]}"#;
    let expected = hex::encode(Sha256::digest(document.as_bytes()));
    assert_eq!(Fingerprint::empty().as_str(), expected);
    assert_eq!(
        Fingerprint::empty().as_str(),
        "d99d4eea2bc02596d1f286b9e1e3a67ae5ab435249e9bfb9f3337063a4bfb8f1"
    );
}

#[test]
fn same_plan_in_two_directories_at_two_times_has_one_fingerprint() {
    let first = Workdir::new(APP).plan_json(&[]);
    // Terraform's timestamps have second resolution.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let second = Workdir::new(APP).plan_json(&[]);
    let timestamp = |doc: &[u8]| serde_json::from_slice::<Value>(doc).unwrap()["timestamp"].clone();
    assert_ne!(timestamp(&first), timestamp(&second));
    let a = PlanSummary::from_show_json(&first).unwrap();
    let b = PlanSummary::from_show_json(&second).unwrap();
    assert_eq!(a, b);
}

#[test]
fn planning_the_same_change_again_gives_the_same_fingerprint() {
    // What `/apply` relies on: the re-plan of an unchanged world matches the reviewed plan.
    let w = Workdir::new(APP);
    w.apply(&[]);
    let reviewed = w.plan(&[("name", "two")]);
    let replanned = w.plan(&[("name", "two")]);
    assert_eq!(reviewed.fingerprint, replanned.fingerprint);
}

#[test]
fn a_different_input_gives_a_different_fingerprint() {
    let w = Workdir::new(APP);
    let one = w.plan(&[("name", "one")]);
    let two = w.plan(&[("name", "two")]);
    assert_eq!(one.counts, two.counts);
    assert_eq!(one.resources, two.resources);
    assert_ne!(one.fingerprint, two.fingerprint);

    // And a world that moved on: the same change against another state.
    w.apply(&[]);
    let after_apply = w.plan(&[("name", "two")]);
    let w2 = Workdir::new(APP);
    w2.apply(&[]);
    let elsewhere = w2.plan(&[("name", "two")]);
    // The two states hold different random ids for the same resources.
    assert_ne!(after_apply.fingerprint, elsewhere.fingerprint);
}

const SECRET_CONFIG: &str = r#"
variable "password" {
  type      = string
  sensitive = true
}

resource "terraform_data" "credentials" {
  input = var.password
}

output "password" {
  value     = var.password
  sensitive = true
}
"#;

#[test]
fn sensitive_values_stay_out_of_the_summary() {
    const SECRET: &str = "correct-horse-battery-staple";
    let w = Workdir::new(SECRET_CONFIG);
    let raw = w.plan_json(&[("password", SECRET)]);
    // The document does carry the secret, so the checks below mean something.
    assert!(String::from_utf8_lossy(&raw).contains(SECRET));
    let s = PlanSummary::from_show_json(&raw).unwrap();
    assert!(!serde_json::to_string(&s).unwrap().contains(SECRET));
    assert!(!format!("{s:?}").contains(SECRET));

    let other = w.plan(&[("password", "another-secret")]);
    assert_eq!(s.resources, other.resources);
    assert_ne!(
        s.fingerprint, other.fingerprint,
        "a changed secret is a changed plan"
    );
    assert_plan_snapshot!("plan_sensitive_create", w, s);

    // Changing the secret after apply: an update, still without the value.
    w.apply(&[("password", SECRET)]);
    let raw = w.plan_json(&[("password", "rotated-secret")]);
    let rotated = PlanSummary::from_show_json(&raw).unwrap();
    let text = serde_json::to_string(&rotated).unwrap();
    assert!(!text.contains(SECRET) && !text.contains("rotated-secret"));
    assert_eq!(rotated.counts.change, 1);
    assert_plan_snapshot!("plan_sensitive_update", w, rotated);
}

#[test]
fn state_instead_of_plan_is_refused() {
    let w = Workdir::new(APP);
    w.apply(&[]);
    let state = terraform(w.path(), &["show", "-json"]);
    let err = PlanSummary::from_show_json(&state).unwrap_err();
    insta::assert_snapshot!(err.to_string(), @"this JSON is not a plan (it has no planned_values; it looks like `terraform show -json` of a state); cascade reads the output of `terraform show -json <planfile>` run on a saved plan file");
}

#[test]
fn future_format_is_refused() {
    let w = Workdir::new(APP);
    let mut doc: Value = serde_json::from_slice(&w.plan_json(&[])).unwrap();
    doc["format_version"] = json!("2.0");
    let err = PlanSummary::from_show_json(&serde_json::to_vec(&doc).unwrap()).unwrap_err();
    insta::assert_snapshot!(err.to_string(), @"plan JSON format_version 2.0 is not supported: cascade reads format 1.x (Terraform 1.x, OpenTofu); use a release that writes format 1.x or upgrade cascade");
}

#[test]
fn drift_is_not_a_change() {
    // A real no-changes plan with a drift entry added by hand (terraform_data cannot drift).
    let w = Workdir::new(APP);
    w.apply(&[]);
    let mut doc: Value = serde_json::from_slice(&w.plan_json(&[])).unwrap();
    let mut drifted = doc["resource_changes"][0].clone();
    drifted["change"]["actions"] = json!(["update"]);
    drifted["change"]["before"]["input"] = json!("changed outside terraform");
    doc["resource_drift"] = json!([drifted]);
    let s = PlanSummary::from_show_json(&serde_json::to_vec(&doc).unwrap()).unwrap();
    assert!(s.is_empty());
    assert_eq!(s.fingerprint, Fingerprint::empty());
}
