//! A copy of one of cascade's own fixture trees (`tests/fixtures/<set>/<name>`)
//! in a temporary directory: the repository at `repo/`, with an `outside/`
//! beside it for links that leave the repository.

use cascade::affected::{ReadIndex, affected};
use cascade::config::RepoConfig;
use cascade::discovery::{Discovery, Unit};
use cascade::terragrunt::{DiscoverOptions, discover};
use cascade::unit::UnitPath;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub struct FixtureTree {
    pub tmp: tempfile::TempDir,
    from: PathBuf,
}

impl FixtureTree {
    pub fn new(set: &str, name: &str) -> FixtureTree {
        let tmp = tempfile::tempdir().unwrap();
        let from = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(set)
            .join(name);
        super::copy_dir(&from, &tmp.path().join("repo"));
        std::fs::create_dir_all(tmp.path().join("outside")).unwrap();
        FixtureTree { tmp, from }
    }

    /// The repository.
    pub fn root(&self) -> PathBuf {
        self.tmp.path().join("repo")
    }

    /// Another copy of the fixture beside the repository (a checkout), at `name`.
    pub fn copy(&self, name: &str) -> PathBuf {
        let to = self.tmp.path().join(name);
        super::copy_dir(&self.from, &to);
        to
    }

    /// A symbolic link at `link` (in the repository) to `target`.
    pub fn link(&self, link: &str, target: &str) {
        std::os::unix::fs::symlink(target, self.root().join(link)).unwrap();
    }

    /// Writes `path`, relative to the temporary directory (`repo/…` or `outside/…`).
    pub fn write(&self, path: &str, text: &str) {
        let p = self.tmp.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// Discovers the repository with `config` as its `.cascade.yaml`.
    pub fn discover(&self, config: &str) -> Discovery {
        discover(&DiscoverOptions {
            dir: self.root(),
            repo_root: self.root(),
            config: RepoConfig::parse(config).unwrap(),
            env: BTreeMap::new(),
            features: BTreeMap::new(),
            deadline: None,
            sources: Default::default(),
        })
    }
}

/// The unit at `path`; fails the test naming the units there are.
pub fn unit<'d>(d: &'d Discovery, path: &str) -> &'d Unit {
    d.unit(&UnitPath::new(path)).unwrap_or_else(|| {
        panic!(
            "no unit {path} in {:?}",
            d.units.iter().map(|u| u.path.as_str()).collect::<Vec<_>>()
        )
    })
}

/// The dependencies of the unit at `path`.
pub fn deps<'d>(d: &'d Discovery, path: &str) -> Vec<&'d str> {
    unit(d, path)
        .dependencies
        .iter()
        .map(UnitPath::as_str)
        .collect()
}

/// The units a change to `files` plans, dependents included.
pub fn affected_by(d: &Discovery, files: &[&str]) -> Vec<String> {
    let (graph, _) = d.graph();
    let index = ReadIndex::new(&d.units);
    let changed: Vec<String> = files.iter().map(|f| f.to_string()).collect();
    affected(&index, &d.units, &graph, &changed, &[], None)
        .units
        .iter()
        .map(|u| u.path.to_string())
        .collect()
}
