//! Discovery against Terragrunt's documented behaviour, one defect of issue 9
//! per test: each discovers a fixture from `tests/fixtures/discovery/` (see its
//! README for the Terragrunt rule it pins) and checks units, edges, read sets
//! and problems.

use crate::support;

use cascade::discovery::Discovery;
use cascade::problem::{Problem, ProblemKind};
use support::fixture_tree::{FixtureTree, affected_by, deps, unit};

/// A copy of `tests/fixtures/discovery/<name>`.
fn fixture(name: &str) -> FixtureTree {
    FixtureTree::new("discovery", name)
}

fn paths(d: &Discovery) -> Vec<&str> {
    d.units.iter().map(|u| u.path.as_str()).collect()
}

fn reads(d: &Discovery, path: &str) -> Vec<String> {
    d.reads_of(unit(d, path))
}

fn problems_of<'d>(d: &'d Discovery, path: &str) -> Vec<&'d Problem> {
    d.problems
        .iter()
        .filter(|p| p.unit.as_ref().is_some_and(|u| u.as_str() == path))
        .collect()
}

fn no_problems(d: &Discovery) {
    assert!(d.problems.is_empty(), "{:#?}", d.problems);
}

// 1. Hidden directories.

#[test]
fn units_in_hidden_directories_are_discovered_and_caches_are_not() {
    let f = fixture("hidden-dirs");
    let d = f.discover("");
    no_problems(&d);
    assert_eq!(paths(&d), [".hide/app", "app", "vpc"]);
    assert_eq!(deps(&d, ".hide/app"), ["vpc"]);
    assert_eq!(deps(&d, "app"), [".hide/app"]);
    assert_eq!(
        affected_by(&d, &[".hide/app/main.tf"]),
        [".hide/app", "app"]
    );
}

#[test]
fn ignore_globs_keep_hidden_directories_out() {
    let f = fixture("hidden-dirs");
    let d = f.discover("ignore:\n  - \".hide/**\"\n");
    assert_eq!(paths(&d), ["app", "vpc"]);
    // The dependency on an ignored directory is reported, not silently dropped.
    assert_eq!(problems_of(&d, "app").len(), 1, "{:#?}", d.problems);
}

// 2. HCL JSON.

#[test]
fn hcl_json_units_includes_and_reads_are_discovered() {
    let f = fixture("hcl-json");
    let d = f.discover("");
    no_problems(&d);
    // live/terragrunt.hcl is the legacy root the JSON units include: not a unit.
    assert_eq!(paths(&d), ["live/app", "live/both", "live/db", "live/vpc"]);
    assert_eq!(deps(&d, "live/app"), ["live/db", "live/vpc"]);
    assert_eq!(deps(&d, "live/db"), ["live/vpc"]);
    // terragrunt.hcl.json wins over terragrunt.hcl in one directory.
    assert_eq!(deps(&d, "live/both"), ["live/vpc"]);
    assert!(reads(&d, "live/app").contains(&"live/common.hcl.json".to_string()));
    assert!(reads(&d, "live/vpc").contains(&"modules/vpc/main.tf".to_string()));
    assert_eq!(
        affected_by(&d, &["live/shared.hcl.json"]),
        ["live/app", "live/db"]
    );
    // The root the JSON units include (live/both depends on vpc).
    assert_eq!(
        affected_by(&d, &["live/terragrunt.hcl"]),
        ["live/app", "live/both", "live/db", "live/vpc"]
    );
}

#[test]
fn hcl_json_problems_are_located_in_the_json_file() {
    let d = cascade::terragrunt::discover_files(&[
        (
            "app/terragrunt.hcl.json",
            b"{\n  \"dependency\": {\n    \"vpc\": {\n      \"config_path\": 42\n    }\n  }\n}\n",
        ),
        (
            "bad/terragrunt.hcl.json",
            b"{\n  \"locals\": {\n    \"a\": \n  }\n}\n",
        ),
        ("top/terragrunt.hcl.json", b"[1, 2]\n"),
    ]);
    let app = problems_of(&d, "app");
    assert_eq!(app.len(), 1, "{:#?}", d.problems);
    assert_eq!(app[0].file.as_deref(), Some("app/terragrunt.hcl.json"));
    assert_eq!(app[0].line, Some(4));
    assert!(unit(&d, "app").unresolved);
    let bad = problems_of(&d, "bad");
    assert_eq!(bad[0].kind, ProblemKind::Parse);
    assert_eq!(bad[0].line, Some(4), "{bad:#?}");
    assert!(unit(&d, "bad").unresolved);
    let top = problems_of(&d, "top");
    assert!(top[0].message.contains("object"), "{top:#?}");
}

// 3 and 11. Includes that cannot be resolved.

#[test]
fn an_include_that_cannot_be_resolved_makes_the_unit_unresolved() {
    let f = fixture("include-failures");
    let d = f.discover("");
    assert_eq!(deps(&d, "fine"), ["vpc"]);
    assert!(!unit(&d, "fine").unresolved);
    assert!(problems_of(&d, "fine").is_empty());
    for name in ["unknown", "missing", "broken"] {
        let u = unit(&d, name);
        assert!(u.unresolved, "{name} must be unresolved");
        let problems = problems_of(&d, name);
        assert!(
            problems
                .iter()
                .any(|p| p.kind == ProblemKind::Unresolved || p.kind == ProblemKind::Parse),
            "{name}: {problems:#?}"
        );
    }
    // Planned on every change, like the problem text says.
    let hit = affected_by(&d, &["vpc/main.tf"]);
    assert_eq!(hit, ["broken", "fine", "missing", "unknown", "vpc"]);
    // The parse error is located in the included file.
    let broken = problems_of(&d, "broken");
    assert!(
        broken
            .iter()
            .any(|p| p.kind == ProblemKind::Parse && p.file.as_deref() == Some("broken.hcl")),
        "{broken:#?}"
    );
    // The comment lists the unknown one as unresolved; the two Terragrunt itself refuses
    // (an included file that does not parse, or does not exist) fail in every plan.
    let scan = cascade::scan::scan(&f.root(), &f.root(), &[]);
    let listed: Vec<String> = scan
        .unresolved()
        .into_iter()
        .map(|(u, _)| u.to_string())
        .collect();
    assert_eq!(listed, ["unknown"]);
    let failing: Vec<String> = scan
        .discovery
        .failures()
        .into_keys()
        .map(|u| u.to_string())
        .collect();
    assert_eq!(failing, ["broken", "missing"]);
}

// 4. config_path = "".

#[test]
fn an_empty_config_path_is_invalid_not_a_cycle() {
    let f = fixture("empty-config-path");
    let d = f.discover("");
    let (_, cycles) = d.graph();
    assert!(cycles.is_empty(), "{cycles:#?}");
    assert_eq!(deps(&d, "app"), ["vpc"]);
    let problems = problems_of(&d, "app");
    assert_eq!(problems.len(), 1, "{problems:#?}");
    let p = problems[0];
    assert_eq!(p.file.as_deref(), Some("app/terragrunt.hcl"));
    assert_eq!(p.line, Some(7));
    assert!(
        p.message
            .contains("dependency \"nothing\" has invalid config_path"),
        "{p}"
    );
    assert!(unit(&d, "app").unresolved);
}

// 5. Blocks evaluated before dependencies.

#[test]
fn a_source_or_local_using_dependency_outputs_is_terragrunts_error() {
    let f = fixture("source-from-dependency");
    let d = f.discover("");
    let app = problems_of(&d, "app");
    assert_eq!(app.len(), 1, "{app:#?}");
    assert_eq!(app[0].kind, ProblemKind::Parse);
    assert_eq!(
        (app[0].file.as_deref(), app[0].line),
        (Some("app/terragrunt.hcl"), Some(7))
    );
    assert!(
        app[0]
            .message
            .contains("terraform.source cannot reference dependency outputs"),
        "{}",
        app[0]
    );
    let local = problems_of(&d, "local");
    assert_eq!(local.len(), 1, "{local:#?}");
    assert_eq!(local[0].line, Some(7));
    assert!(local[0].message.contains("local.vpc_id"), "{}", local[0]);
    assert!(unit(&d, "app").unresolved && unit(&d, "local").unresolved);
    // Inputs come after dependencies.
    assert!(problems_of(&d, "fine").is_empty());
    assert!(!unit(&d, "fine").unresolved);
    assert_eq!(deps(&d, "fine"), ["vpc"]);
}

/// Issue 23: `try()` and `can()` over `dependency.*` where Terragrunt has no
/// `dependency` variable yet take the fallback; where Terragrunt checks the
/// references before evaluating (locals, `terraform.source`), they do not help.
#[test]
fn try_and_can_over_dependency_outputs_follow_terragrunts_order() {
    let f = fixture("try-before-dependencies");
    let d = f.discover("");
    // The shape: a local with try() (and one with can()) is still
    // Terragrunt's error, and says that try() and can() do not change that.
    for path in ["fn-a", "fn-b", "fn-c"] {
        let problems = problems_of(&d, path);
        assert_eq!(problems.len(), 1, "{path}: {problems:#?}");
        let p = problems[0];
        assert_eq!(p.kind, ProblemKind::Parse, "{p}");
        assert_eq!(p.line, Some(2), "{p}");
        assert!(p.message.contains("even inside try() or can()"), "{p}");
        assert!(unit(&d, path).unresolved, "{path}");
        assert_eq!(deps(&d, path), ["project"], "{path}");
    }
    // A dependency's config_path and enabled, an include path and a feature
    // default take the fallback (try() nested in another call included, and an
    // include not parsed yet passed over): no problem, and the fallback's edge.
    for (path, expected) in [
        ("path", &["vpc"][..]),
        ("enabled", &["vpc"][..]),
        ("nested", &["vpc"][..]),
        ("inputs", &["vpc"][..]),
    ] {
        assert!(
            problems_of(&d, path).is_empty(),
            "{path}: {:#?}",
            d.problems
        );
        assert!(!unit(&d, path).unresolved, "{path}");
        assert_eq!(deps(&d, path), expected, "{path}");
    }
    assert!(reads(&d, "nested").contains(&"root.hcl".to_string()));
    // A try() whose every argument fails is an error: the unit is unresolved.
    let all_fail = problems_of(&d, "all-fail");
    assert_eq!(all_fail.len(), 1, "{all_fail:#?}");
    assert_eq!(all_fail[0].kind, ProblemKind::Unresolved);
    assert_eq!(all_fail[0].line, Some(2));
    assert!(
        all_fail[0]
            .message
            .contains("there is no `dependency` variable here"),
        "{}",
        all_fail[0]
    );
    assert!(unit(&d, "all-fail").unresolved);
    // terraform.source refuses a reference anywhere, try() or not.
    let source = problems_of(&d, "source-try");
    assert_eq!(source.len(), 1, "{source:#?}");
    assert_eq!(
        (source[0].kind, source[0].line),
        (ProblemKind::Parse, Some(6))
    );
    assert!(
        source[0].message.contains("even inside try() or can()"),
        "{}",
        source[0]
    );
    // Outside try() the refusal stays, without the try() clause.
    let plain = problems_of(&d, "plain");
    assert_eq!(plain.len(), 1, "{plain:#?}");
    assert_eq!(
        (plain[0].kind, plain[0].line),
        (ProblemKind::Parse, Some(6))
    );
    assert!(
        plain[0]
            .message
            .contains("dependency.config_path refers to dependency outputs")
            && !plain[0].message.contains("try()"),
        "{}",
        plain[0]
    );
    assert!(unit(&d, "plain").unresolved);
}

// 6. read_terragrunt_config of a file with includes.

#[test]
fn read_terragrunt_config_merges_the_includes_of_the_file_it_reads() {
    let f = fixture("read-config-includes");
    let d = f.discover("");
    no_problems(&d);
    assert_eq!(deps(&d, "app"), ["db", "vpc"]);
    let r = reads(&d, "app");
    for file in ["configs/app.hcl", "configs/base.hcl"] {
        assert!(r.contains(&file.to_string()), "{file}: {r:?}");
    }
    assert_eq!(affected_by(&d, &["configs/base.hcl"]), ["app"]);
}

// 7. mark_glob_as_read.

#[test]
fn mark_glob_as_read_returns_the_files_and_records_the_glob() {
    let f = fixture("glob-reads");
    let d = f.discover("");
    no_problems(&d);
    assert_eq!(deps(&d, "app"), ["db", "vpc"]);
    let app = unit(&d, "app");
    assert!(
        app.reads.globs.contains("app/config/{*.yaml,**/*.yaml}"),
        "{:?}",
        app.reads
    );
    // A file added later that the glob matches plans the unit.
    assert_eq!(affected_by(&d, &["app/config/new/more.yaml"]), ["app"]);
}

// 8. Symbolic links.

#[test]
fn dependency_paths_resolve_links_and_links_out_are_errors() {
    let f = fixture("symlinks");
    f.link("vpc-link", "vpc");
    f.link("modules/outside", "../../outside");
    f.write("outside/secret.tfvars", "token = \"hunter2\"\n");
    f.link("var-file/secret.tfvars", "../../outside/secret.tfvars");
    let d = f.discover("");
    // Terragrunt compares dependency paths with links resolved.
    assert_eq!(deps(&d, "app"), ["vpc"]);
    assert!(problems_of(&d, "app").is_empty(), "{:#?}", d.problems);
    // A module call through a link out of the repository is an error, not a silent skip.
    assert!(unit(&d, "uses-module").unresolved);
    assert!(
        problems_of(&d, "uses-module")
            .iter()
            .any(|p| p.message.contains("outside the repository")),
        "{:#?}",
        d.problems
    );
    // So is a var file that leads out.
    assert!(unit(&d, "var-file").unresolved);
    for p in &d.problems {
        assert!(!p.message.contains("hunter2"), "{p}");
    }
}

// 9. terraform.source = ".".

#[test]
fn a_source_of_dot_reads_real_files_only() {
    let f = fixture("source-dot");
    let d = f.discover("");
    no_problems(&d);
    assert_eq!(reads(&d, "."), ["main.tf", "terragrunt.hcl"]);
    assert_eq!(
        reads(&d, "app"),
        ["app/main.tf", "app/nested/main.tf", "app/terragrunt.hcl"]
    );
}

// 10. Relative paths in functions called from an included file.

#[test]
fn relative_paths_in_an_included_file_follow_terragrunt_function_by_function() {
    let f = fixture("include-relative");
    let d = f.discover("");
    no_problems(&d);
    for env in ["dev", "prod"] {
        let app = format!("live/{env}/app");
        let vpc = format!("live/{env}/vpc");
        // read_terragrunt_config("env.hcl") and read_tfvars_file read the unit's own files.
        assert_eq!(deps(&d, &app), [vpc.as_str()]);
        let u = unit(&d, &app);
        let files = &u.reads.files;
        for own in ["env.hcl", "unit.tfvars", "secrets.enc.yaml", "marker.txt"] {
            assert!(files.contains(&format!("{app}/{own}")), "{own}: {files:?}");
        }
        assert!(
            u.reads.globs.contains(&format!("{app}/*.json")),
            "{:?}",
            u.reads
        );
        // file(), fileexists() and templatefile() read next to root.hcl.
        for shared in ["shared.txt", "root.tpl"] {
            assert!(files.contains(shared), "{shared}: {files:?}");
        }
        for decoy in ["env.hcl", "unit.tfvars", "secrets.enc.yaml", "marker.txt"] {
            assert!(!files.contains(decoy), "{decoy}: {files:?}");
        }
    }
    assert_eq!(affected_by(&d, &["env.hcl"]), Vec::<String>::new());
    assert_eq!(
        affected_by(&d, &["shared.txt"]),
        ["live/dev/app", "live/prod/app"]
    );
}

// 12. Module sources.

#[test]
fn only_relative_and_absolute_module_sources_are_local() {
    let f = fixture("module-sources");
    let d = f.discover("");
    no_problems(&d);
    let app = unit(&d, "app");
    let dirs: Vec<&str> = app.reads.dirs.iter().map(String::as_str).collect();
    assert_eq!(dirs, ["modules/local", "modules/local/labels"]);
    let registry = unit(&d, "registry");
    assert!(registry.reads.dirs.is_empty(), "{:?}", registry.reads);
    assert_eq!(reads(&d, "registry"), ["registry/terragrunt.hcl"]);
}
