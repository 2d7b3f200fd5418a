//! Discovery against a hostile pull request: symbolic links out of the
//! repository, secrets planted to be echoed, and configurations built to
//! exhaust time, memory or the stack. Each test is one attack, on real files
//! in a temporary directory; each ends in problems (never a read outside the
//! repository, a leak, a crash or a hang).

use cascade::config::RepoConfig;
use cascade::discovery::Discovery;
use cascade::problem::{Problem, ProblemKind};
use cascade::terragrunt::{DiscoverOptions, discover, limits};
use cascade::unit::UnitPath;
use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A recognisable secret: shaped like a path, so only the rule about computed
/// paths (not a shape check) keeps it out of messages.
const SECRET: &str = "cascade-secret-7f3a9c";

/// A repository (`<tmp>/repo`) next to a directory outside it (`<tmp>/outside`).
struct Sandbox {
    tmp: tempfile::TempDir,
}

impl Sandbox {
    fn new(files: &[(&str, &str)]) -> Sandbox {
        let sandbox = Sandbox {
            tmp: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(sandbox.root()).unwrap();
        std::fs::create_dir_all(sandbox.outside()).unwrap();
        for (path, text) in files {
            sandbox.write(path, text);
        }
        sandbox
    }

    fn root(&self) -> PathBuf {
        self.tmp.path().join("repo")
    }

    fn outside(&self) -> PathBuf {
        self.tmp.path().join("outside")
    }

    /// Writes `path` under the sandbox (`repo/...` or `outside/...`).
    fn write(&self, path: &str, text: &str) {
        let p = self.tmp.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// Makes `link` (under the sandbox) a symbolic link to `target` (as written).
    fn link(&self, link: &str, target: &str) {
        let p = self.tmp.path().join(link);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        symlink(target, p).unwrap();
    }

    fn discover(&self) -> Discovery {
        self.discover_until(None)
    }

    fn discover_until(&self, deadline: Option<Instant>) -> Discovery {
        discover(&DiscoverOptions {
            dir: self.root(),
            repo_root: self.root(),
            config: RepoConfig::default(),
            env: BTreeMap::new(),
            features: BTreeMap::new(),
            deadline,
            sources: Default::default(),
        })
    }
}

fn unit(d: &Discovery, path: &str) -> Option<UnitPath> {
    d.unit(&UnitPath::new(path)).map(|u| u.path.clone())
}

fn problems_of<'d>(d: &'d Discovery, unit: &str) -> Vec<&'d Problem> {
    d.problems
        .iter()
        .filter(|p| p.unit.as_ref().map(|u| u.as_str()) == Some(unit))
        .collect()
}

/// Asserts that `unit` has a problem whose message contains `needle`.
fn has_problem(d: &Discovery, unit: &str, needle: &str) -> Problem {
    problems_of(d, unit)
        .into_iter()
        .find(|p| p.message.contains(needle))
        .unwrap_or_else(|| panic!("{unit}: no problem saying {needle:?} in {:#?}", d.problems))
        .clone()
}

/// Asserts that no problem carries the secret or the sandbox's absolute path.
fn assert_no_leak(d: &Discovery, sandbox: &Sandbox) {
    let outer = sandbox.tmp.path().canonicalize().unwrap();
    let outer = outer.to_string_lossy();
    let outer_relative = outer.trim_start_matches('/');
    for p in &d.problems {
        let text = format!("{p} {:?} {:?}", p.file, p.unit);
        assert!(!text.contains(SECRET), "leaks the secret: {p}");
        assert!(!text.contains("BEGIN PRIVATE KEY"), "leaks a key: {p}");
        assert!(
            !text.contains(outer_relative),
            "leaks the server's path: {p}"
        );
    }
}

/// Asserts that `unit` ran into a limit whose message contains `needle`.
fn assert_limit(d: &Discovery, unit: &str, needle: &str) {
    let p = has_problem(d, unit, needle);
    assert_eq!(p.kind, ProblemKind::Unresolved, "{p}");
    assert!(p.message.contains("cascade's limit"), "{p}");
    let u = d
        .unit(&UnitPath::new(unit))
        .expect("the unit is still listed");
    assert!(u.unresolved, "{unit} is unresolved");
}

/// Asserts that a repository whose one unit `app` is `text` runs into a
/// limit whose message contains `needle`.
fn assert_unit_limit(text: &str, needle: &str) {
    let s = Sandbox::new(&[("repo/app/terragrunt.hcl", text)]);
    assert_limit(&s.discover(), "app", needle);
}

fn private_key() -> String {
    format!("-----BEGIN PRIVATE KEY-----\n{SECRET}\n-----END PRIVATE KEY-----\n")
}

// Symbolic links out of the repository.

#[test]
fn a_linked_file_outside_the_repository_is_refused_not_read() {
    let s = Sandbox::new(&[(
        "repo/app/terragrunt.hcl",
        "locals {\n  k = tonumber(file(\"k\"))\n}\n\ndependencies {\n  paths = [local.k]\n}\n",
    )]);
    s.write("outside/key.pem", &private_key());
    s.link("repo/app/k", "../../outside/key.pem");
    let d = s.discover();
    assert_no_leak(&d, &s);
    has_problem(&d, "app", "outside the repository");
    let link = problems_of(&d, "app")
        .into_iter()
        .find(|p| p.file.as_deref() == Some("app/k"))
        .expect("the link is reported at its own path");
    assert!(link.message.contains("symbolic link"), "{link}");
    assert!(d.unit(&UnitPath::new("app")).unwrap().unresolved);
}

#[test]
fn a_linked_directory_outside_the_repository_is_no_unit() {
    let s = Sandbox::new(&[
        ("outside/unit/terragrunt.hcl", ""),
        ("repo/vpc/terragrunt.hcl", ""),
    ]);
    s.link("repo/app", "../outside/unit");
    let d = s.discover();
    assert_eq!(unit(&d, "app"), None, "{:#?}", d.units);
    assert!(unit(&d, "vpc").is_some());
    let p = d
        .problems
        .iter()
        .find(|p| p.file.as_deref() == Some("app"))
        .unwrap_or_else(|| panic!("no problem at the link: {:#?}", d.problems));
    assert!(p.message.contains("leads outside the repository"), "{p}");
    assert_no_leak(&d, &s);
}

#[test]
fn a_dependency_through_a_linked_directory_outside_is_no_unit() {
    let s = Sandbox::new(&[
        ("outside/unit/terragrunt.hcl", ""),
        (
            "repo/live/app/terragrunt.hcl",
            "dependency \"ext\" {\n  config_path = \"../../ext/unit\"\n}\n",
        ),
    ]);
    s.link("repo/ext", "../outside");
    let d = s.discover();
    assert_eq!(unit(&d, "ext/unit"), None, "{:#?}", d.units);
    let p = has_problem(&d, "live/app", "leads outside the repository");
    assert_eq!(p.kind, ProblemKind::MissingDependency);
    assert_no_leak(&d, &s);
}

#[test]
fn a_linked_terragrunt_hcl_outside_the_repository_is_never_parsed() {
    let s = Sandbox::new(&[(
        "outside/secret.hcl",
        &format!("dependencies {{\n  paths = [\"../{SECRET}\"]\n}}\n"),
    )]);
    s.link("repo/app/terragrunt.hcl", "../../outside/secret.hcl");
    let d = s.discover();
    assert_eq!(unit(&d, "app"), None);
    assert!(
        d.problems
            .iter()
            .any(|p| p.file.as_deref() == Some("app/terragrunt.hcl")
                && p.message.contains("outside the repository")),
        "{:#?}",
        d.problems
    );
    assert_no_leak(&d, &s);
}

#[test]
fn an_include_through_a_link_outside_the_repository_is_refused() {
    let s = Sandbox::new(&[
        (
            "outside/root.hcl",
            &format!("dependencies {{\n  paths = [\"../{SECRET}\"]\n}}\n"),
        ),
        (
            "repo/app/terragrunt.hcl",
            "include \"root\" {\n  path = find_in_parent_folders(\"root.hcl\")\n}\n",
        ),
    ]);
    s.link("repo/root.hcl", "../outside/root.hcl");
    let d = s.discover();
    let p = has_problem(&d, "app", "outside the repository");
    assert_eq!(
        (p.file.as_deref(), p.line),
        (Some("app/terragrunt.hcl"), Some(2))
    );
    assert!(d.unit(&UnitPath::new("app")).unwrap().unresolved);
    assert_no_leak(&d, &s);
}

#[test]
fn a_linked_cascade_yaml_is_refused_and_never_echoed() {
    let s = Sandbox::new(&[("repo/app/terragrunt.hcl", "")]);
    s.write("outside/secret.yaml", &format!("{SECRET}: first line\n"));
    s.link("repo/.cascade.yaml", "../outside/secret.yaml");
    let scan = cascade::scan::scan(&s.root(), &s.root(), &[]);
    let p = scan
        .problems
        .iter()
        .find(|p| p.kind == ProblemKind::Config)
        .unwrap_or_else(|| panic!("{:#?}", scan.problems));
    assert!(p.message.contains("symbolic link"), "{p}");
    for p in &scan.problems {
        assert!(!p.to_string().contains(SECRET), "{p}");
    }
    // Discovery still runs, without the configuration.
    assert!(scan.discovery.unit(&UnitPath::new("app")).is_some());
}

#[test]
fn a_cascade_yaml_that_is_a_fifo_does_not_hang() {
    let s = Sandbox::new(&[("repo/app/terragrunt.hcl", "")]);
    mkfifo(&s.root().join(".cascade.yaml"));
    let problem = RepoConfig::load(&s.root()).unwrap_err();
    assert!(problem.message.contains("not a regular file"), "{problem}");
}

#[test]
fn a_link_loop_is_followed_once_and_reported() {
    let s = Sandbox::new(&[("repo/a/terragrunt.hcl", ""), ("repo/b/terragrunt.hcl", "")]);
    s.link("repo/a/up", "..");
    s.link("repo/a/to-b", "../b");
    s.link("repo/b/to-a", "../a");
    let d = s.discover();
    let units: Vec<&str> = d.units.iter().map(|u| u.path.as_str()).collect();
    // Terragrunt lists a linked unit directory at the link's path; each loop is cut once.
    assert_eq!(units, ["a", "a/to-b", "b", "b/to-a"]);
    for link in ["a/up", "a/to-b/to-a", "b/to-a/to-b"] {
        let p = d
            .problems
            .iter()
            .find(|p| p.file.as_deref() == Some(link))
            .unwrap_or_else(|| panic!("{link} is not reported: {:#?}", d.problems));
        assert!(p.message.contains("loop"), "{p}");
    }
}

#[test]
fn many_refused_links_are_counted_not_listed() {
    let s = Sandbox::new(&[("repo/app/terragrunt.hcl", "")]);
    for i in 0..200 {
        s.link(&format!("repo/app/l{i}"), "../../outside");
    }
    let d = s.discover();
    assert_eq!(d.problems.len(), limits::MAX_PROBLEMS_PER_UNIT + 1);
    let more = 200 - limits::MAX_PROBLEMS_PER_UNIT;
    assert!(
        d.problems
            .iter()
            .any(|p| p.message.starts_with(&format!("{more} more"))),
        "{:#?}",
        d.problems
    );
    assert!(d.unit(&UnitPath::new("app")).unwrap().unresolved);
}

#[test]
fn a_tree_deeper_than_the_walk_goes_is_reported() {
    let deep = vec!["d"; limits::MAX_WALK_DEPTH + 5].join("/");
    let s = Sandbox::new(&[
        (&format!("repo/{deep}/terragrunt.hcl"), ""),
        ("repo/vpc/terragrunt.hcl", ""),
    ]);
    let d = s.discover();
    assert_eq!(d.units.len(), 1, "{:#?}", d.units);
    let cut = vec!["d"; limits::MAX_WALK_DEPTH + 1].join("/");
    let p = d
        .problems
        .iter()
        .find(|p| p.file.as_deref() == Some(cut.as_str()))
        .unwrap_or_else(|| panic!("{:#?}", d.problems));
    assert!(p.message.contains("cascade's limit"), "{p}");
}

#[test]
fn links_inside_the_repository_work_like_terragrunt() {
    let s = Sandbox::new(&[
        ("repo/vpc/terragrunt.hcl", ""),
        ("repo/common/env.hcl", "locals {\n  vpc = \"vpc\"\n}\n"),
        (
            "repo/shared/app/terragrunt.hcl",
            "locals {\n  env = read_terragrunt_config(\"env.hcl\")\n}\n\ndependency \"vpc\" {\n  config_path = \"${get_repo_root()}/${local.env.locals.vpc}\"\n}\n",
        ),
    ]);
    s.link("repo/shared/app/env.hcl", "../../common/env.hcl");
    s.link("repo/live", "shared");
    let d = s.discover();
    assert!(d.problems.is_empty(), "{:#?}", d.problems);
    let app = d
        .unit(&UnitPath::new("live/app"))
        .expect("a unit at the link's path");
    assert_eq!(app.dependencies, [UnitPath::new("vpc")]);
    let reads = d.reads_of(app);
    for real in [
        "common/env.hcl",
        "shared/app/terragrunt.hcl",
        "shared/app/env.hcl",
        "live",
    ] {
        assert!(reads.contains(&real.to_string()), "reads {real}: {reads:?}");
    }
    // The linked file's target is read by the unit that reads it through the link.
    let shared = d.unit(&UnitPath::new("shared/app")).unwrap();
    assert!(d.reads_of(shared).contains(&"common/env.hcl".to_string()));
}

// Secrets planted to be echoed.

/// Every way a problem could quote a file's contents, one unit each.
const LEAK_ATTEMPTS: &[(&str, &str)] = &[
    (
        "tonumber",
        "locals {\n  n = tonumber(file(\"../secret.txt\"))\n}\n\ndependencies {\n  paths = [local.n]\n}\n",
    ),
    (
        "read-config",
        "locals {\n  c = read_terragrunt_config(trimspace(file(\"../secret.txt\")))\n}\n\ndependencies {\n  paths = [local.c.locals.x]\n}\n",
    ),
    (
        "config-path",
        "dependency \"x\" {\n  config_path = trimspace(file(\"../secret.txt\"))\n}\n",
    ),
    (
        "paths",
        "dependencies {\n  paths = [\"../${trimspace(file(\"../secret.txt\"))}\"]\n}\n",
    ),
    (
        "include",
        "include \"x\" {\n  path = trimspace(file(\"../secret.txt\"))\n}\n",
    ),
    (
        "json",
        "dependencies {\n  paths = [jsondecode(file(\"../secret.txt\"))]\n}\n",
    ),
    (
        "yaml",
        "dependencies {\n  paths = [yamldecode(file(\"../secret-bad.yaml\"))]\n}\n",
    ),
    (
        "format",
        "dependencies {\n  paths = [format(file(\"../secret-format.txt\"))]\n}\n",
    ),
    (
        "key",
        "locals {\n  m = { a = 1 }\n}\n\ndependencies {\n  paths = [local.m[trimspace(file(\"../secret.txt\"))]]\n}\n",
    ),
    (
        "lookup",
        "dependencies {\n  paths = [lookup({}, trimspace(file(\"../secret.txt\")))]\n}\n",
    ),
    (
        "index",
        "dependencies {\n  paths = [index([], trimspace(file(\"../secret.txt\")))]\n}\n",
    ),
    (
        "env",
        "dependencies {\n  paths = [get_env(trimspace(file(\"../secret.txt\")))]\n}\n",
    ),
    (
        "find",
        "include \"x\" {\n  path = find_in_parent_folders(trimspace(file(\"../secret.txt\")))\n}\n",
    ),
    (
        "fileset",
        "locals {\n  f = fileset(\".\", file(\"../secret-glob.txt\"))\n}\n",
    ),
    (
        "for-key",
        "locals {\n  s = trimspace(file(\"../secret.txt\"))\n}\n\ndependencies {\n  paths = [{ for k in [local.s, local.s] : k => 1 }]\n}\n",
    ),
    (
        "tfvars",
        "dependencies {\n  paths = [read_tfvars_file(\"../secret.txt\")]\n}\n",
    ),
    (
        "parse-link",
        "include \"x\" {\n  path = \"secret-link.hcl\"\n}\n",
    ),
    (
        "outside-link",
        "dependencies {\n  paths = [file(\"../outside-secret\")]\n}\n",
    ),
    (
        "repo-root",
        "dependency \"x\" {\n  config_path = \"${get_repo_root()}/../x\"\n}\n",
    ),
    (
        "repo-root-twice",
        "dependency \"x\" {\n  config_path = \"x${get_repo_root()}\"\n}\n",
    ),
    (
        "repo-root-parent",
        "dependency \"x\" {\n  config_path = \"x${dirname(get_repo_root())}\"\n}\n",
    ),
];

#[test]
fn no_problem_quotes_a_file_or_the_servers_paths() {
    let mut files: Vec<(String, String)> = vec![
        ("repo/secret.txt".into(), format!("{SECRET}\n")),
        ("repo/secret-bad.yaml".into(), format!("a: [{SECRET}\n")),
        ("repo/secret-format.txt".into(), format!("{SECRET} %s %s")),
        ("repo/secret-glob.txt".into(), format!("[{SECRET}")),
        ("outside/secret".into(), private_key()),
    ];
    for (name, text) in LEAK_ATTEMPTS {
        files.push((format!("repo/{name}/terragrunt.hcl"), text.to_string()));
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let s = Sandbox::new(&refs);
    s.link("repo/parse-link/secret-link.hcl", "../secret.txt");
    s.link("repo/outside-secret", "../outside/secret");
    let d = s.discover();
    assert_no_leak(&d, &s);
    for (name, _) in LEAK_ATTEMPTS {
        assert!(
            !problems_of(&d, name).is_empty(),
            "{name}: the attack should end in a problem: {:#?}",
            d.problems
        );
    }
    let tonumber = has_problem(&d, "tonumber", "tonumber()");
    assert!(
        tonumber
            .message
            .contains("expected a number, found a string"),
        "{tonumber}"
    );
    has_problem(
        &d,
        "config-path",
        "<a path computed from file contents, not shown>",
    );
}

#[test]
fn a_computed_path_is_shown_until_file_contents_are_read() {
    let s = Sandbox::new(&[
        ("repo/secret.txt", SECRET),
        (
            "repo/plain/terragrunt.hcl",
            "dependency \"x\" {\n  config_path = \"../${lower(\"VPC\")}\"\n}\n",
        ),
        (
            "repo/tainted/terragrunt.hcl",
            "locals {\n  s = file(\"../secret.txt\")\n}\n\ndependency \"x\" {\n  config_path = \"../${local.s}\"\n}\n",
        ),
    ]);
    let d = s.discover();
    has_problem(&d, "plain", "plain depends on vpc (dependency \"x\")");
    has_problem(
        &d,
        "tainted",
        "tainted depends on <a path computed from file contents, not shown>",
    );
    assert_no_leak(&d, &s);
}

// Configurations built to exhaust time, memory or the stack.

#[test]
fn a_huge_format_width_is_refused() {
    let s = Sandbox::new(&[(
        "repo/app/terragrunt.hcl",
        "dependencies {\n  paths = [format(\"%99999999999s\", \"x\")]\n}\n",
    )]);
    let d = s.discover();
    assert_limit(&d, "app", "format width");
    let p = has_problem(&d, "app", "format width");
    assert_eq!(
        (p.file.as_deref(), p.line),
        (Some("app/terragrunt.hcl"), Some(2))
    );
}

#[test]
fn a_huge_format_precision_is_refused() {
    assert_unit_limit(
        "dependencies {\n  paths = [format(\"%.99999999999f\", 1)]\n}\n",
        "format precision",
    );
}

#[test]
fn a_string_over_the_limit_is_refused() {
    let kib = "x".repeat(2048);
    assert_unit_limit(
        &format!(
            "locals {{\n  kib = \"{kib}\"\n  big = join(\"\", [for i in range(1000) : local.kib])\n}}\n\ndependencies {{\n  paths = [local.big]\n}}\n"
        ),
        "MiB",
    );
}

#[test]
fn a_template_over_the_limit_is_refused() {
    let kib = "x".repeat(2048);
    assert_unit_limit(
        &format!(
            "locals {{\n  kib = \"{kib}\"\n}}\n\ndependencies {{\n  paths = [\"%{{ for i in range(1000) }}${{local.kib}}%{{ endfor }}\"]\n}}\n"
        ),
        "MiB",
    );
}

#[test]
fn a_collection_over_the_limit_is_refused() {
    assert_unit_limit(
        "locals {\n  commas = replace(format(\"%200000s\", \"\"), \" \", \",\")\n}\n\ndependencies {\n  paths = split(\",\", local.commas)\n}\n",
        "elements",
    );
}

#[test]
fn nested_loops_run_out_of_steps() {
    assert_unit_limit(
        "locals {\n  cube = [for a in range(1000) : [for b in range(1000) : [for c in range(1000) : a + b + c]]]\n}\n\ndependencies {\n  paths = local.cube\n}\n",
        "evaluation steps",
    );
}

#[test]
fn nested_template_loops_run_out_of_steps() {
    assert_unit_limit(
        "dependencies {\n  paths = [\"%{ for a in range(1000) }%{ for b in range(1000) }%{ for c in range(1000) }%{ endfor }%{ endfor }%{ endfor }\"]\n}\n",
        "evaluation steps",
    );
}

#[test]
fn copies_of_a_large_value_run_out_of_steps() {
    assert_unit_limit(
        "locals {\n  wide = range(1000)\n  copies = [for i in range(1000) : [for j in range(1000) : local.wide]]\n}\n\ndependencies {\n  paths = local.copies\n}\n",
        "evaluation steps",
    );
}

#[test]
fn a_chain_of_five_thousand_locals_does_not_overflow_the_stack() {
    let mut text = String::from("locals {\n  l0 = \"../vpc\"\n");
    for i in 1..5000 {
        text.push_str(&format!("  l{i} = local.l{}\n", i - 1));
    }
    text.push_str("}\n\ndependencies {\n  paths = [local.l4999]\n}\n");
    let s = Sandbox::new(&[("repo/app/terragrunt.hcl", &text)]);
    assert_limit(&s.discover(), "app", "nests deeper");
}

#[test]
fn reads_nested_too_deep_are_refused() {
    let mut files = vec![(
        "repo/app/terragrunt.hcl".to_string(),
        "locals {\n  c = read_terragrunt_config(\"../r/0.hcl\")\n}\n\ndependencies {\n  paths = [local.c.locals.x]\n}\n"
            .to_string(),
    )];
    for i in 0..40 {
        files.push((
            format!("repo/r/{i}.hcl"),
            format!(
                "locals {{\n  x = read_terragrunt_config(\"{}.hcl\").locals.x\n}}\n",
                i + 1
            ),
        ));
    }
    files.push((
        "repo/r/40.hcl".into(),
        "locals {\n  x = \"../vpc\"\n}\n".into(),
    ));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    assert_limit(
        &Sandbox::new(&refs).discover(),
        "app",
        "read_terragrunt_config calls nest",
    );
}

/// hcl-edit itself refuses more than 64 nested levels (and 128 binary
/// operators), so these were never a crash; pinned so an upgrade cannot regress.
#[test]
fn deep_nesting_of_any_kind_is_a_parse_error() {
    let depth = 100_000;
    let shapes = [
        ("[".repeat(depth), "]".repeat(depth)),
        ("(".repeat(depth), ")".repeat(depth)),
        ("\"${".repeat(depth), "}\"".repeat(depth)),
        ("true ? ".repeat(depth), " : 1".repeat(depth)),
        ("!".repeat(depth), String::new()),
        ("-".repeat(depth), String::new()),
        ("1 + ".repeat(depth), String::new()),
    ];
    for (open, close) in shapes {
        let text = format!("locals {{\n  x = {open}1{close}\n}}\n");
        let s = Sandbox::new(&[("repo/app/terragrunt.hcl", &text)]);
        let d = s.discover();
        let p = problems_of(&d, "app")
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("{}: no problem", &open[..4]))
            .clone();
        assert_eq!(p.kind, ProblemKind::Parse, "{p}");
    }
}

#[test]
fn a_yaml_alias_bomb_is_refused() {
    let mut yaml = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let prev = format!("*a{}", i - 1);
        yaml.push_str(&format!("a{i}: &a{i} [{}]\n", vec![prev; 10].join(", ")));
    }
    let s = Sandbox::new(&[
        ("repo/app/bomb.yaml", &yaml),
        (
            "repo/app/terragrunt.hcl",
            "locals {\n  y = yamldecode(file(\"bomb.yaml\"))\n}\n\ndependencies {\n  paths = [local.y.a9]\n}\n",
        ),
    ]);
    assert_limit(&s.discover(), "app", "YAML");
}

#[test]
fn a_file_read_that_is_a_fifo_does_not_hang() {
    let s = Sandbox::new(&[(
        "repo/app/terragrunt.hcl",
        "dependencies {\n  paths = [file(\"pipe\")]\n}\n",
    )]);
    mkfifo(&s.root().join("app/pipe"));
    let d = s.discover();
    has_problem(&d, "app", "file(): cannot read app/pipe");
}

#[test]
fn a_terragrunt_hcl_that_is_a_fifo_is_no_unit() {
    let s = Sandbox::new(&[("repo/vpc/terragrunt.hcl", "")]);
    std::fs::create_dir_all(s.root().join("app")).unwrap();
    mkfifo(&s.root().join("app/terragrunt.hcl"));
    let d = s.discover();
    assert_eq!(unit(&d, "app"), None);
    assert!(unit(&d, "vpc").is_some());
}

#[test]
fn a_configuration_file_over_the_limit_is_refused() {
    let padding = "#".repeat(limits::MAX_CONFIG_FILE_BYTES as usize + 1);
    let s = Sandbox::new(&[("repo/app/terragrunt.hcl", &padding)]);
    let d = s.discover();
    let p = has_problem(&d, "app", "larger than cascade's limit");
    assert_eq!(p.file.as_deref(), Some("app/terragrunt.hcl"));
    assert!(d.unit(&UnitPath::new("app")).unwrap().unresolved);
}

#[test]
fn a_data_file_over_the_limit_is_refused() {
    let s = Sandbox::new(&[
        (
            "repo/app/big.txt",
            &"x".repeat(limits::MAX_STRING_BYTES + 1),
        ),
        (
            "repo/app/terragrunt.hcl",
            "dependencies {\n  paths = [file(\"big.txt\")]\n}\n",
        ),
    ]);
    assert_limit(&s.discover(), "app", "MiB");
}

// The deadline.

#[test]
fn past_the_deadline_every_unit_is_unresolved() {
    let s = Sandbox::new(&[
        ("repo/a/terragrunt.hcl", ""),
        (
            "repo/b/terragrunt.hcl",
            "dependencies {\n  paths = [\"../a\"]\n}\n",
        ),
    ]);
    let d = s.discover_until(Some(Instant::now()));
    assert!(d.timed_out);
    for name in ["a", "b"] {
        let p = has_problem(&d, name, "time limit");
        assert!(p.message.contains("--discovery-timeout"), "{p}");
        assert!(d.unit(&UnitPath::new(name)).unwrap().unresolved);
    }
}

#[test]
fn past_the_deadline_plain_modules_are_unresolved_too() {
    let s = Sandbox::new(&[("repo/global/dns/main.tf", "")]);
    let d = discover(&DiscoverOptions {
        dir: s.root(),
        repo_root: s.root(),
        config: RepoConfig::parse("modules:\n  - path: global/dns\n").unwrap(),
        env: BTreeMap::new(),
        features: BTreeMap::new(),
        deadline: Some(Instant::now()),
        sources: Default::default(),
    });
    assert!(d.timed_out);
    assert!(d.unit(&UnitPath::new("global/dns")).unwrap().unresolved);
    has_problem(&d, "global/dns", "time limit");
}

#[test]
fn the_deadline_stops_an_evaluation_in_progress() {
    // Each unit alone stays under the step limit; together they would take seconds.
    let slow = "locals {\n  x = [for a in range(1000) : [for b in range(300) : b]]\n}\n\ndependencies {\n  paths = [length(local.x) > 0 ? \"../vpc\" : \"\"]\n}\n";
    let mut files = vec![("repo/vpc/terragrunt.hcl".to_string(), String::new())];
    for i in 0..400 {
        files.push((format!("repo/u{i}/terragrunt.hcl"), slow.to_string()));
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let s = Sandbox::new(&refs);
    let d = s.discover_until(Some(Instant::now() + Duration::from_millis(50)));
    assert!(d.timed_out);
    let late: Vec<&str> = d
        .units
        .iter()
        .filter(|u| u.unresolved)
        .map(|u| u.path.as_str())
        .collect();
    assert!(!late.is_empty());
    for name in late {
        has_problem(&d, name, "time limit");
    }
}

#[test]
fn scan_with_deadline_reports_the_time_limit() {
    let s = Sandbox::new(&[("repo/a/terragrunt.hcl", "")]);
    let scan = cascade::scan::scan_with_deadline(
        &s.root(),
        &s.root(),
        RepoConfig::default(),
        &[],
        Instant::now(),
    );
    assert!(scan.discovery.timed_out);
    assert_eq!(scan.unresolved().len(), 1);
}

#[test]
fn a_fuzzer_can_discover_text_without_a_checkout() {
    let d = cascade::terragrunt::discover_files(&[
        ("vpc/terragrunt.hcl", b""),
        (
            "app/terragrunt.hcl",
            b"dependencies {\n  paths = [\"../vpc\"]\n}\n",
        ),
        ("/etc/passwd", b"skipped"),
        ("../escape", b"skipped"),
    ]);
    assert!(d.problems.is_empty(), "{:#?}", d.problems);
    let app = d.unit(&UnitPath::new("app")).unwrap();
    assert_eq!(app.dependencies, [UnitPath::new("vpc")]);
    assert_eq!(d.units.len(), 2);
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
}
