//! The rule behind issue 9's defects 3 and 11, as a property: for any
//! expression that feeds an edge, an include or a read set, a value discovery
//! cannot know makes the unit *unresolved* (planned on every change), never a
//! silently missing edge or read.
//!
//! Each case builds a unit from a random set of "slots" (an include path, a
//! `config_path`, a read function's argument, an exposed local, a values
//! file, …), checks that the unit resolves with every slot known, then blanks
//! one slot with something discovery never computes (`run_cmd`, an unset
//! `get_env`, an AWS call) and checks that the unit is unresolved.

use cascade::discovery::Discovery;
use cascade::terragrunt::discover_files;
use cascade::unit::UnitPath;
use proptest::prelude::*;

/// One place where a value feeds an edge, an include or a read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    IncludePath,
    IncludeMergeStrategy,
    IncludedDependency,
    ExposedLocal,
    ConfigPath,
    DependencyEnabled,
    DependenciesPaths,
    DependenciesPathsEntry,
    LocalFeedingEdge,
    Source,
    ExcludeIf,
    ExcludeActions,
    FeatureDefault,
    ValuesFile,
    ReadConfigPath,
    ReadConfigLocal,
    File,
    TemplateFile,
    Fileset,
    FindInParentFolders,
    MarkAsRead,
    ReadTfvars,
    Sops,
    VarFile,
    ConditionalRead,
}

const SLOTS: &[Slot] = &[
    Slot::IncludePath,
    Slot::IncludeMergeStrategy,
    Slot::IncludedDependency,
    Slot::ExposedLocal,
    Slot::ConfigPath,
    Slot::DependencyEnabled,
    Slot::DependenciesPaths,
    Slot::DependenciesPathsEntry,
    Slot::LocalFeedingEdge,
    Slot::Source,
    Slot::ExcludeIf,
    Slot::ExcludeActions,
    Slot::FeatureDefault,
    Slot::ValuesFile,
    Slot::ReadConfigPath,
    Slot::ReadConfigLocal,
    Slot::File,
    Slot::TemplateFile,
    Slot::Fileset,
    Slot::FindInParentFolders,
    Slot::MarkAsRead,
    Slot::ReadTfvars,
    Slot::Sops,
    Slot::VarFile,
    Slot::ConditionalRead,
];

/// Expressions discovery never computes.
const UNKNOWNS: &[&str] = &[
    "run_cmd(\"echo\", \"x\")",
    "get_env(\"CASCADE_TEST_NEVER_SET\")",
    "get_aws_account_id()",
    "local.from_command",
];

/// The value a slot holds: known, or the unknown expression.
fn value(blank: Option<&str>, known: &str) -> String {
    match blank {
        Some(unknown) => format!("\"${{{unknown}}}\""),
        None => format!("\"{known}\""),
    }
}

fn boolean(blank: Option<&str>, known: bool) -> String {
    match blank {
        Some(unknown) => format!("({unknown}) == \"yes\""),
        None => known.to_string(),
    }
}

/// The repository for `slots`, with `blanked` (if any) made unknown.
fn repository(slots: &[Slot], blanked: Option<(Slot, &str)>) -> Vec<(String, String)> {
    let blank = |slot: Slot| blanked.filter(|(s, _)| *s == slot).map(|(_, u)| u);
    let has = |slot: Slot| slots.contains(&slot);
    let mut unit = String::from("locals {\n  from_command = run_cmd(\"id\")\n}\n\n");
    let mut root = String::from("locals {\n  vpc = \"vpc\"\n}\n\n");
    let mut files = vec![
        ("vpc/terragrunt.hcl".to_string(), String::new()),
        ("db/terragrunt.hcl".to_string(), String::new()),
        ("modules/m/main.tf".to_string(), String::new()),
        ("app/data.txt".to_string(), "x".to_string()),
        ("app/t.tftpl".to_string(), "x".to_string()),
        ("app/vars.tfvars".to_string(), "a = 1\n".to_string()),
        ("app/s.yaml".to_string(), "a: 1\n".to_string()),
        ("app/conf/a.yaml".to_string(), "a: 1\n".to_string()),
        (
            "env.hcl".to_string(),
            "locals {\n  dir = \"db\"\n}\n".to_string(),
        ),
        ("app/extra.tfvars".to_string(), "b = 2\n".to_string()),
    ];
    if has(Slot::IncludePath)
        || has(Slot::IncludeMergeStrategy)
        || has(Slot::IncludedDependency)
        || has(Slot::ExposedLocal)
    {
        let path = match blank(Slot::IncludePath) {
            Some(u) => format!("\"${{{u}}}/root.hcl\""),
            None => "find_in_parent_folders(\"root.hcl\")".to_string(),
        };
        unit.push_str(&format!(
            "include \"root\" {{\n  path = {path}\n  expose = true\n  merge_strategy = {}\n}}\n\n",
            value(blank(Slot::IncludeMergeStrategy), "shallow")
        ));
    }
    if has(Slot::IncludedDependency) {
        root.push_str(&format!(
            "dependency \"from_root\" {{\n  config_path = {}\n}}\n\n",
            value(blank(Slot::IncludedDependency), "../vpc")
        ));
    }
    if has(Slot::ExposedLocal) {
        if let Some(u) = blank(Slot::ExposedLocal) {
            root = root.replace("vpc = \"vpc\"", &format!("vpc = {u}"));
        }
        unit.push_str(
            "dependency \"exposed\" {\n  config_path = \"../${include.root.locals.vpc}\"\n}\n\n",
        );
    }
    if has(Slot::ConfigPath) || has(Slot::DependencyEnabled) {
        unit.push_str(&format!(
            "dependency \"vpc\" {{\n  config_path = {}\n  enabled = {}\n}}\n\n",
            value(blank(Slot::ConfigPath), "../vpc"),
            boolean(blank(Slot::DependencyEnabled), true)
        ));
    }
    let mut paths = Vec::new();
    if has(Slot::DependenciesPathsEntry) {
        paths.push(value(blank(Slot::DependenciesPathsEntry), "../db"));
    }
    if has(Slot::LocalFeedingEdge) {
        unit = unit.replace(
            "locals {\n",
            &format!(
                "locals {{\n  edge = {}\n",
                value(blank(Slot::LocalFeedingEdge), "../db")
            ),
        );
        paths.push("local.edge".to_string());
    }
    if has(Slot::ReadConfigPath) || has(Slot::ReadConfigLocal) {
        let path = value(blank(Slot::ReadConfigPath), "../env.hcl");
        unit = unit.replace(
            "locals {\n",
            &format!("locals {{\n  env = read_terragrunt_config({path})\n"),
        );
        if let Some(u) = blank(Slot::ReadConfigLocal) {
            files.retain(|(p, _)| p != "env.hcl");
            files.push(("env.hcl".into(), format!("locals {{\n  dir = {u}\n}}\n")));
        }
        paths.push("\"../${local.env.locals.dir}\"".to_string());
    }
    if has(Slot::DependenciesPaths) {
        match blank(Slot::DependenciesPaths) {
            Some(u) => unit.push_str(&format!("dependencies {{\n  paths = {u}\n}}\n\n")),
            None => paths.push("\"../db\"".into()),
        }
    }
    if !paths.is_empty() {
        unit.push_str(&format!(
            "dependencies {{\n  paths = [{}]\n}}\n\n",
            paths.join(", ")
        ));
    }
    if has(Slot::Source) || has(Slot::VarFile) {
        unit.push_str(&format!(
            "terraform {{\n  source = {}\n",
            value(blank(Slot::Source), "../modules/m")
        ));
        if has(Slot::VarFile) {
            unit.push_str(&format!(
                "  extra_arguments \"vars\" {{\n    commands = [\"plan\"]\n    required_var_files = [{}]\n  }}\n",
                value(blank(Slot::VarFile), "extra.tfvars")
            ));
        }
        unit.push_str("}\n\n");
    }
    if has(Slot::FeatureDefault) {
        unit.push_str(&format!(
            "feature \"off\" {{\n  default = {}\n}}\n\nexclude {{\n  if = feature.off.value\n  actions = [\"plan\"]\n}}\n\n",
            boolean(blank(Slot::FeatureDefault), false)
        ));
    } else if has(Slot::ExcludeIf) || has(Slot::ExcludeActions) {
        let actions = match blank(Slot::ExcludeActions) {
            Some(u) => format!("[{u}]"),
            None => "[\"plan\"]".into(),
        };
        // `if` true so that the actions are looked at; known actions that do
        // not name plan keep the unit in.
        let cond = boolean(blank(Slot::ExcludeIf), true);
        let actions = if blank(Slot::ExcludeActions).is_none() {
            "[\"output\"]".to_string()
        } else {
            actions
        };
        unit.push_str(&format!(
            "exclude {{\n  if = {cond}\n  actions = {actions}\n}}\n\n"
        ));
    }
    if has(Slot::ValuesFile) {
        let v = match blank(Slot::ValuesFile) {
            Some(u) => u.replace("local.from_command", "run_cmd(\"id\")"),
            None => "\"../vpc\"".into(),
        };
        files.push(("app/terragrunt.values.hcl".into(), format!("vpc = {v}\n")));
        unit.push_str("dependency \"from_values\" {\n  config_path = values.vpc\n}\n\n");
    }
    let mut reads = Vec::new();
    let read_slot = |slot: Slot, known: &str, call: &dyn Fn(&str) -> String| -> Option<String> {
        has(slot).then(|| call(&value(blank(slot), known)))
    };
    reads.extend(read_slot(Slot::File, "data.txt", &|v| format!("file({v})")));
    reads.extend(read_slot(Slot::TemplateFile, "t.tftpl", &|v| {
        format!("templatefile({v}, {{}})")
    }));
    reads.extend(read_slot(Slot::Fileset, "conf", &|v| {
        format!("fileset({v}, \"*.yaml\")")
    }));
    reads.extend(read_slot(Slot::FindInParentFolders, "env.hcl", &|v| {
        format!("find_in_parent_folders({v})")
    }));
    reads.extend(read_slot(Slot::MarkAsRead, "data.txt", &|v| {
        format!("mark_as_read({v})")
    }));
    reads.extend(read_slot(Slot::ReadTfvars, "vars.tfvars", &|v| {
        format!("read_tfvars_file({v})")
    }));
    reads.extend(read_slot(Slot::Sops, "s.yaml", &|v| {
        format!("sops_decrypt_file({v})")
    }));
    if has(Slot::ConditionalRead) {
        let cond = boolean(blank(Slot::ConditionalRead), true);
        reads.push(format!("{cond} ? file(\"data.txt\") : \"\""));
        // A condition that is unknown picks neither branch: the read is unknown.
        if blank(Slot::ConditionalRead).is_some() {
            reads.pop();
            reads.push(format!("file({cond} ? \"data.txt\" : \"t.tftpl\")"));
        }
    }
    for (i, read) in reads.iter().enumerate() {
        unit = unit.replace("locals {\n", &format!("locals {{\n  read_{i} = {read}\n"));
    }
    files.push(("root.hcl".into(), root));
    files.push(("app/terragrunt.hcl".into(), unit));
    files
}

fn discover(files: &[(String, String)]) -> Discovery {
    let borrowed: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_bytes()))
        .collect();
    discover_files(&borrowed)
}

fn app_problems(d: &Discovery) -> Vec<String> {
    d.problems
        .iter()
        .filter(|p| p.unit.as_ref().is_some_and(|u| u.as_str() == "app"))
        .map(|p| p.to_string())
        .collect()
}

fn slots() -> impl Strategy<Value = Vec<Slot>> {
    proptest::sample::subsequence(SLOTS.to_vec(), 1..6).prop_map(|mut slots| {
        // A unit has one `exclude` block: with a feature flag it is the
        // flag's, and the other exclude slots are not written at all.
        if slots.contains(&Slot::FeatureDefault) {
            slots.retain(|s| !matches!(s, Slot::ExcludeIf | Slot::ExcludeActions));
        }
        slots
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn an_unknown_value_where_an_edge_or_read_is_decided_makes_the_unit_unresolved(
        slots in slots(),
        pick in any::<proptest::sample::Index>(),
        unknown in proptest::sample::select(UNKNOWNS),
    ) {
        // With every value known the unit resolves: the check below can fail.
        let known = discover(&repository(&slots, None));
        let app = known.unit(&UnitPath::new("app")).expect("the unit");
        prop_assert!(!app.unresolved, "{slots:?}: {:#?}", app_problems(&known));
        prop_assert!(app_problems(&known).is_empty(), "{slots:?}: {:#?}", app_problems(&known));

        let blanked = *pick.get(&slots);
        let d = discover(&repository(&slots, Some((blanked, unknown))));
        let app = d.unit(&UnitPath::new("app")).expect("the unit");
        prop_assert!(
            app.unresolved,
            "{blanked:?} made unknown with {unknown} in {slots:?}, yet the unit resolved: {:#?}",
            app_problems(&d)
        );
        prop_assert!(!app_problems(&d).is_empty());
    }
}

#[test]
fn every_slot_alone_is_caught() {
    for &slot in SLOTS {
        for unknown in UNKNOWNS {
            let known = discover(&repository(&[slot], None));
            let app = known.unit(&UnitPath::new("app")).expect("the unit");
            assert!(
                !app.unresolved,
                "{slot:?} known: {:#?}",
                app_problems(&known)
            );
            let d = discover(&repository(&[slot], Some((slot, unknown))));
            let app = d.unit(&UnitPath::new("app")).expect("the unit");
            assert!(app.unresolved, "{slot:?} with {unknown}");
        }
    }
}
