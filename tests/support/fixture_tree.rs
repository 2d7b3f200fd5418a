//! A copy of one of cascade's own fixture trees (`tests/fixtures/<set>/<name>`)
//! in a temporary directory: the repository at `repo/`, with an `outside/`
//! beside it for links that leave the repository.

use cascade::config::RepoConfig;
use cascade::terragrunt::{DiscoverOptions, Discovery, discover};
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
        })
    }
}
