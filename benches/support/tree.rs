//! A synthetic Terragrunt monorepo of any size, for the discovery benchmark and
//! `examples/gen_tree.rs`.
//!
//! Layout (every path relative to `root`, which plays the repository root):
//!
//! ```text
//! root.hcl                                   read_terragrunt_config of account/region/env
//! modules/labels/main.tf                     leaf module called by others
//! modules/mod-NN/{main,variables,outputs}.tf ~20 modules; some call ../labels or ../mod-(NN-1)
//! live/<env>/account.hcl
//! live/<env>/env.hcl
//! live/<env>/<region>/region.hcl
//! live/<env>/<region>/component-NNN/terragrunt.hcl
//! ```
//!
//! Units are spread round-robin over the env × region directories. Each unit
//! includes root.hcl, takes `terraform.source` from `${get_repo_root()}/modules/…`
//! and has 0–3 `dependency` blocks on components earlier in the same region, so
//! the graph is a DAG. The same `(units, seed)` always gives the same bytes.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

/// What [`generate`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TreeStats {
    /// Units (directories holding `terragrunt.hcl`).
    pub units: usize,
    /// Files written, units included.
    pub files: usize,
    /// Bytes written.
    pub bytes: u64,
    /// `dependency` edges written: what discovery must find.
    pub edges: usize,
}

pub const ENVS: [&str; 4] = ["dev", "stage", "prod", "sandbox"];
pub const REGIONS: [&str; 5] = [
    "us-east-1",
    "us-west-2",
    "eu-west-1",
    "eu-central-1",
    "ap-southeast-2",
];
pub const MODULES: usize = 20;

/// A tiny deterministic PRNG (xorshift64*, seeded through splitmix64 so that
/// any seed, 0 included, gives a good stream). Not for anything but test data.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Rng(if z == 0 { 0x2545_F491_4F6C_DD1D } else { z })
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (`n > 0`); the modulo bias is irrelevant here.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Writes the tree under `root` (created if missing) and returns what it wrote.
///
/// Panics on I/O errors: this is test-data generation.
pub fn generate(root: &Path, units: usize, seed: u64) -> TreeStats {
    let mut out = Writer {
        root,
        stats: TreeStats::default(),
    };
    let mut rng = Rng::new(seed);

    out.file("root.hcl", ROOT_HCL);
    write_modules(&mut out);

    let regions: Vec<(usize, usize)> = (0..ENVS.len())
        .flat_map(|e| (0..REGIONS.len()).map(move |r| (e, r)))
        .collect();
    for (e, env) in ENVS.iter().enumerate() {
        out.file(&format!("live/{env}/account.hcl"), &account_hcl(e));
        out.file(
            &format!("live/{env}/env.hcl"),
            &format!("locals {{\n  environment = \"{env}\"\n}}\n"),
        );
        for region in REGIONS {
            out.file(
                &format!("live/{env}/{region}/region.hcl"),
                &format!("locals {{\n  aws_region = \"{region}\"\n}}\n"),
            );
        }
    }

    // Unit i goes to region i % R as that region's (i / R)-th component.
    let per_region_max = units.div_ceil(regions.len());
    let width = per_region_max.max(1).to_string().len().max(3);
    for (slot, &(e, r)) in regions.iter().enumerate() {
        let count = units / regions.len() + usize::from(slot < units % regions.len());
        let dir = format!("live/{}/{}", ENVS[e], REGIONS[r]);
        for j in 0..count {
            let deps = pick_dependencies(&mut rng, j);
            let text = unit_hcl(&mut rng, &dir, j, width, &deps);
            out.file(
                &format!("{dir}/{}/terragrunt.hcl", component(j, width)),
                &text,
            );
            out.stats.units += 1;
            out.stats.edges += deps.len();
        }
    }
    out.stats
}

/// `component-007`, zero-padded to `width` digits.
pub fn component(index: usize, width: usize) -> String {
    format!("component-{index:0width$}")
}

struct Writer<'a> {
    root: &'a Path,
    stats: TreeStats,
}

impl Writer<'_> {
    fn file(&mut self, rel: &str, text: &str) {
        let path = self.root.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)
                .unwrap_or_else(|e| panic!("mkdir {}: {e}", parent.display()));
        }
        fs::write(&path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        self.stats.files += 1;
        self.stats.bytes += text.len() as u64;
    }
}

/// Up to three distinct earlier components of the same region, sorted. Half the
/// picks go to the first ten components (the "core" every region has: network,
/// IAM, …), the rest anywhere earlier, so there are both hubs and long chains.
fn pick_dependencies(rng: &mut Rng, index: usize) -> Vec<usize> {
    if index == 0 {
        return Vec::new();
    }
    let wanted = rng.below(4).min(index);
    let mut deps = Vec::with_capacity(wanted);
    while deps.len() < wanted {
        let d = if rng.below(2) == 0 {
            rng.below(index.min(10))
        } else {
            rng.below(index)
        };
        if !deps.contains(&d) {
            deps.push(d);
        }
    }
    deps.sort_unstable();
    deps
}

fn unit_hcl(rng: &mut Rng, dir: &str, index: usize, width: usize, deps: &[usize]) -> String {
    let name = component(index, width);
    let module = rng.below(MODULES);
    let mut s = String::with_capacity(1024);
    s.push_str("include \"root\" {\n  path = find_in_parent_folders(\"root.hcl\")\n}\n\n");
    let _ = write!(
        s,
        "terraform {{\n  source = \"${{get_repo_root()}}/modules/mod-{module:02}\"\n}}\n"
    );
    for &d in deps {
        let dep = component(d, width);
        let label = dep.replace('-', "_");
        // One in four uses the repo-root form, the rest the usual relative path.
        let config_path = if rng.below(4) == 0 {
            format!("${{get_repo_root()}}/{dir}/{dep}")
        } else {
            format!("../{dep}")
        };
        let _ = write!(
            s,
            "\ndependency \"{label}\" {{\n  config_path = \"{config_path}\"\n  mock_outputs = {{\n    id   = \"mock-{dep}\"\n    name = \"{dep}\"\n  }}\n  mock_outputs_allowed_terraform_commands = [\"validate\", \"plan\"]\n}}\n"
        );
    }
    // Keys aligned the way `terraform fmt` would.
    let inputs: Vec<(String, String)> = [
        ("name".to_string(), format!("\"{name}\"")),
        ("size".to_string(), (1 + rng.below(8)).to_string()),
        ("replicas".to_string(), (1 + rng.below(3)).to_string()),
    ]
    .into_iter()
    .chain(deps.iter().map(|&d| {
        let label = component(d, width).replace('-', "_");
        (
            format!("{label}_id"),
            format!("dependency.{label}.outputs.id"),
        )
    }))
    .collect();
    let key_width = inputs.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    s.push_str("\ninputs = {\n");
    for (key, value) in &inputs {
        let _ = writeln!(s, "  {key:key_width$} = {value}");
    }
    s.push_str("  tags = {\n    component = \"");
    s.push_str(&name);
    s.push_str("\"\n    owner     = \"platform\"\n  }\n}\n");
    s
}

fn account_hcl(env: usize) -> String {
    let account = if ENVS[env] == "prod" {
        "prod"
    } else {
        "nonprod"
    };
    format!(
        "locals {{\n  account_name   = \"{account}\"\n  aws_account_id = \"{:012}\"\n}}\n",
        100_000_000_000u64 + env as u64 * 1_111
    )
}

fn write_modules(out: &mut Writer<'_>) {
    out.file(
        "modules/labels/main.tf",
        "variable \"name\" {\n  type = string\n}\n\noutput \"labels\" {\n  value = {\n    name       = var.name\n    managed_by = \"terragrunt\"\n  }\n}\n",
    );
    for m in 0..MODULES {
        let dir = format!("modules/mod-{m:02}");
        let mut main = String::new();
        let _ = write!(
            main,
            "resource \"terraform_data\" \"this\" {{\n  input = {{\n    name     = var.name\n    size     = var.size\n    replicas = var.replicas\n    module   = \"mod-{m:02}\"\n  }}\n}}\n"
        );
        // Nested local module calls, so following module sources matters:
        // every third module calls the leaf `labels`, every fifth its predecessor
        // (which may call `labels` in turn).
        if m % 3 == 0 {
            main.push_str(
                "\nmodule \"labels\" {\n  source = \"../labels\"\n  name   = var.name\n}\n",
            );
        }
        if m % 5 == 4 {
            let _ = write!(
                main,
                "\nmodule \"base\" {{\n  source = \"../mod-{:02}\"\n  name   = \"${{var.name}}-base\"\n}}\n",
                m - 1
            );
        }
        out.file(&format!("{dir}/main.tf"), &main);
        out.file(
            &format!("{dir}/variables.tf"),
            "variable \"name\" {\n  type = string\n}\n\nvariable \"size\" {\n  type    = number\n  default = 1\n}\n\nvariable \"replicas\" {\n  type    = number\n  default = 1\n}\n\nvariable \"tags\" {\n  type    = map(string)\n  default = {}\n}\n",
        );
        out.file(
            &format!("{dir}/outputs.tf"),
            "output \"id\" {\n  value = terraform_data.this.id\n}\n\noutput \"name\" {\n  value = var.name\n}\n",
        );
    }
}

const ROOT_HCL: &str = r#"# Root configuration of the generated tree; every unit includes it.
locals {
  account_vars = read_terragrunt_config(find_in_parent_folders("account.hcl"))
  region_vars  = read_terragrunt_config(find_in_parent_folders("region.hcl"))
  env_vars     = read_terragrunt_config(find_in_parent_folders("env.hcl"))

  account_name = local.account_vars.locals.account_name
  account_id   = local.account_vars.locals.aws_account_id
  aws_region   = local.region_vars.locals.aws_region
  environment  = local.env_vars.locals.environment
}

generate "provider" {
  path      = "provider.tf"
  if_exists = "overwrite_terragrunt"
  contents  = <<EOF
provider "aws" {
  region              = "${local.aws_region}"
  allowed_account_ids = ["${local.account_id}"]
}
EOF
}

remote_state {
  backend = "s3"
  config = {
    bucket         = "tf-state-${local.account_name}-${local.aws_region}"
    key            = "${path_relative_to_include()}/terraform.tfstate"
    region         = local.aws_region
    encrypt        = true
    dynamodb_table = "tf-locks"
  }
  generate = {
    path      = "backend.tf"
    if_exists = "overwrite_terragrunt"
  }
}

inputs = merge(
  local.account_vars.locals,
  local.region_vars.locals,
  local.env_vars.locals,
)
"#;
