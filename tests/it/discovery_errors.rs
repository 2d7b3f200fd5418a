//! Every message discovery can give a user, pinned as a snapshot: what went
//! wrong, where (file:line), and what to do next.

use cascade::config::RepoConfig;
use cascade::terragrunt::{DiscoverOptions, discover};
use std::collections::BTreeMap;

/// Discovers a repository made of `files` and renders its problems as a user sees them.
fn problems(files: &[(&str, &str)], config: &str) -> String {
    problems_with(files, config, &[], None)
}

/// [`problems`] with symbolic links (`link`, `target` as written; `link` is
/// repo-relative, and `../outside/...` leads out of the repository) and a deadline.
fn problems_with(
    files: &[(&str, &str)],
    config: &str,
    links: &[(&str, &str)],
    deadline: Option<std::time::Instant>,
) -> String {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("outside")).unwrap();
    std::fs::write(tmp.path().join("outside/file"), "").unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    for (link, target) in links {
        let p = repo.join(link);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, p).unwrap();
    }
    for (path, text) in files {
        let p = repo.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let opts = DiscoverOptions {
        dir: repo.clone(),
        repo_root: repo.clone(),
        config: RepoConfig::parse(config).unwrap(),
        env: BTreeMap::new(),
        features: BTreeMap::new(),
        deadline,
        sources: Default::default(),
    };
    let discovery = discover(&opts);
    let (_, cycles) = discovery.graph();
    let mut all = discovery.problems.clone();
    all.extend(cycles);
    let root = repo.canonicalize().unwrap().to_string_lossy().to_string();
    all.iter()
        .map(|p| {
            format!(
                "[{}] {}",
                serde_json::to_value(p.kind).unwrap().as_str().unwrap(),
                p
            )
            .replace(&root, "<repo>")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn parse_error() {
    insta::assert_snapshot!(problems(
        &[
            ("a/terragrunt.hcl", "locals {\n  x = \n}\n"),
            ("b/terragrunt.hcl", "")
        ],
        ""
    ));
}

#[test]
fn parse_error_in_an_included_file() {
    insta::assert_snapshot!(problems(
        &[
            ("root.hcl", "locals {\n  x = [1,\n}\n"),
            (
                "a/terragrunt.hcl",
                "include \"root\" {\n  path = find_in_parent_folders(\"root.hcl\")\n}\n"
            )
        ],
        ""
    ));
}

#[test]
fn repeated_object_keys_are_accepted_like_go_hcl() {
    let text = "dependency \"b\" {\n  config_path = \"../b\"\n  mock_outputs = {\n    id = \"1\"\n    id = \"2\"\n  }\n}\n";
    assert_eq!(
        problems(&[("a/terragrunt.hcl", text), ("b/terragrunt.hcl", "")], ""),
        ""
    );
}

#[test]
fn missing_dependency_directory() {
    insta::assert_snapshot!(problems(
        &[(
            "app/terragrunt.hcl",
            "dependencies {\n  paths = [\"../vpc\"]\n}\n"
        )],
        ""
    ));
}

#[test]
fn dependency_directory_without_a_unit() {
    insta::assert_snapshot!(problems(
        &[
            (
                "app/terragrunt.hcl",
                "dependency \"vpc\" {\n  config_path = \"../vpc\"\n}\n"
            ),
            ("vpc/main.tf", "")
        ],
        ""
    ));
}

#[test]
fn dependency_outside_the_repository() {
    insta::assert_snapshot!(problems(
        &[(
            "app/terragrunt.hcl",
            "dependency \"vpc\" {\n  config_path = \"../../vpc\"\n}\n"
        )],
        ""
    ));
}

#[test]
fn cycle() {
    insta::assert_snapshot!(problems(
        &[
            (
                "a/terragrunt.hcl",
                "dependencies {\n  paths = [\"../c\"]\n}\n"
            ),
            (
                "b/terragrunt.hcl",
                "dependencies {\n  paths = [\"../a\"]\n}\n"
            ),
            (
                "c/terragrunt.hcl",
                "dependencies {\n  paths = [\"../b\"]\n}\n"
            ),
        ],
        ""
    ));
}

#[test]
fn unresolved_run_cmd_in_config_path() {
    insta::assert_snapshot!(problems(
        &[(
            "app/terragrunt.hcl",
            "locals {\n  env = run_cmd(\"whoami\")\n}\n\ndependency \"vpc\" {\n  config_path = \"../${local.env}-vpc\"\n}\n"
        ),],
        ""
    ));
}

#[test]
fn unresolved_unset_environment_variable() {
    insta::assert_snapshot!(problems(
        &[(
            "app/terragrunt.hcl",
            "dependencies {\n  paths = [get_env(\"VPC_DIR\")]\n}\n"
        )],
        ""
    ));
}

#[test]
fn unresolved_read_of_an_unknown_file() {
    insta::assert_snapshot!(problems(
        &[(
            "app/terragrunt.hcl",
            "locals {\n  account = get_aws_account_id()\n  cfg = yamldecode(file(\"${local.account}.yaml\"))\n}\n"
        )],
        ""
    ));
}

#[test]
fn unresolved_source() {
    insta::assert_snapshot!(problems(
        &[(
            "app/terragrunt.hcl",
            "terraform {\n  source = \"../modules/${get_env(\"MODULE\")}\"\n}\n"
        )],
        ""
    ));
}

#[test]
fn local_that_refers_to_itself() {
    insta::assert_snapshot!(problems(
        &[(
            "app/terragrunt.hcl",
            "locals {\n  a = local.b\n  b = local.a\n}\n\ndependencies {\n  paths = [local.a]\n}\n"
        )],
        ""
    ));
}

#[test]
fn missing_file_read_by_read_terragrunt_config() {
    insta::assert_snapshot!(problems(
        &[(
            "app/terragrunt.hcl",
            "dependency \"x\" {\n  config_path = read_terragrunt_config(\"missing.hcl\").locals.path\n}\n"
        )],
        ""
    ));
}

#[test]
fn find_in_parent_folders_finds_nothing() {
    insta::assert_snapshot!(problems(
        &[(
            "live/app/terragrunt.hcl",
            "include \"root\" {\n  path = find_in_parent_folders(\"root.hcl\")\n}\n"
        )],
        ""
    ));
}

#[test]
fn include_of_a_missing_file() {
    insta::assert_snapshot!(problems(
        &[(
            "app/terragrunt.hcl",
            "include \"root\" {\n  path = \"../nope.hcl\"\n}\n"
        )],
        ""
    ));
}

#[test]
fn nested_include() {
    insta::assert_snapshot!(problems(
        &[
            ("base.hcl", "locals {}\n"),
            ("mid.hcl", "include \"base\" {\n  path = \"base.hcl\"\n}\n"),
            (
                "app/terragrunt.hcl",
                "include \"mid\" {\n  path = find_in_parent_folders(\"mid.hcl\")\n}\n"
            ),
        ],
        ""
    ));
}

#[test]
fn unexposed_include_read() {
    insta::assert_snapshot!(problems(
        &[
            ("root.hcl", "locals {\n  vpc = \"../vpc\"\n}\n"),
            ("vpc/terragrunt.hcl", ""),
            (
                "app/terragrunt.hcl",
                "include \"root\" {\n  path = find_in_parent_folders(\"root.hcl\")\n}\n\ndependency \"vpc\" {\n  config_path = include.root.locals.vpc\n}\n",
            ),
        ],
        ""
    ));
}

#[test]
fn config_names_units_that_do_not_exist() {
    insta::assert_snapshot!(problems(
        &[("app/terragrunt.hcl", "")],
        "implicit_deps:\n  app: [nowhere]\n  ghost: [app]\nmodules:\n  - path: global/dns\n"
    ));
}

#[test]
fn link_out_of_the_repository() {
    insta::assert_snapshot!(problems_with(
        &[("app/terragrunt.hcl", "locals {\n  k = file(\"k\")\n}\n")],
        "",
        &[("app/k", "../../outside/file"), ("ext", "../outside")],
        None
    ));
}

#[test]
fn link_loop() {
    insta::assert_snapshot!(problems_with(
        &[("app/terragrunt.hcl", "")],
        "",
        &[("app/up", "..")],
        None
    ));
}

#[test]
fn computed_path_not_shown() {
    insta::assert_snapshot!(problems(
        &[
            ("name.txt", "vpc"),
            (
                "app/terragrunt.hcl",
                "dependency \"x\" {\n  config_path = \"../${file(\"../name.txt\")}\"\n}\n"
            )
        ],
        ""
    ));
}

#[test]
fn limit_format_width() {
    insta::assert_snapshot!(problems(
        &[(
            "app/terragrunt.hcl",
            "dependencies {\n  paths = [format(\"%99999999999s\", \"x\")]\n}\n"
        )],
        ""
    ));
}

#[test]
fn limit_steps() {
    insta::assert_snapshot!(problems(
        &[(
            "app/terragrunt.hcl",
            "locals {\n  x = [for a in range(1000) : [for b in range(1000) : [for c in range(1000) : c]]]\n}\n\ndependencies {\n  paths = local.x\n}\n"
        )],
        ""
    ));
}

#[test]
fn deadline() {
    insta::assert_snapshot!(problems_with(
        &[("app/terragrunt.hcl", "")],
        "",
        &[],
        Some(std::time::Instant::now())
    ));
}

#[test]
fn configuration_file_too_large() {
    insta::assert_snapshot!(problems(
        &[("app/terragrunt.hcl", &"#".repeat(5 << 20))],
        ""
    ));
}

#[test]
fn stack_components_cascade_cannot_expand() {
    insta::assert_snapshot!(problems(
        &[
            ("catalog/app/terragrunt.hcl", ""),
            (
                "live/terragrunt.stack.hcl",
                "unit \"app\" {\n  source = \"../catalog/app\"\n  path   = \"app\"\n}\n\nunit \"queue\" {\n  source = \"git::https://example.com/units.git//queue\"\n  path   = \"queue\"\n}\n\nunit \"each\" {\n  source = \"../catalog/app\"\n  path   = \"each\"\n  expansion {\n    for_each = [\"a\"]\n  }\n}\n\nstack \"remote\" {\n  source = \"git::https://example.com/stacks.git//net\"\n  path   = \"net\"\n}\n"
            ),
        ],
        ""
    ));
}

/// Issue 23: the refusals of `dependency.*` before Terragrunt reads outputs,
/// inside `try()` and outside it.
#[test]
fn dependency_outputs_before_dependencies() {
    insta::assert_snapshot!(problems(
        &[
            ("vpc/terragrunt.hcl", ""),
            (
                "app/terragrunt.hcl",
                "locals {\n  name = try(dependency.vpc.outputs.name, \"fn-dev-01\")\n  id   = dependency.vpc.outputs.id\n}\n\ndependency \"vpc\" {\n  config_path = \"../vpc\"\n}\n\nterraform {\n  source = try(dependency.vpc.outputs.source, \"../m\")\n}\n"
            ),
            (
                "net/terragrunt.hcl",
                "dependency \"vpc\" {\n  config_path = try(dependency.a.outputs.path, dependency.b.outputs.path)\n}\n\ndependencies {\n  paths = try(dependency.vpc.outputs.paths, [\"../vpc\"])\n}\n"
            ),
        ],
        ""
    ));
}
