//! The parallel walk against the one-thread walk: the same listing, and the
//! same listing every time when a limit decides what is left out.

use super::*;
use std::collections::BTreeSet;
use std::os::unix::fs::symlink;

type Summary = (
    Vec<String>,
    BTreeSet<String>,
    BTreeMap<String, String>,
    BTreeMap<String, Refusal>,
    Option<Truncation>,
);

fn summary(mut listing: Listing) -> Summary {
    listing.files.sort_unstable();
    (
        listing.files,
        listing.dirs.into_iter().collect(),
        listing.links.into_iter().collect(),
        listing.refused,
        listing.truncated,
    )
}

fn sequential(root: &Path) -> Summary {
    let walk = Walk::new(root, None, false);
    walk.run("");
    summary(walk.found.into_inner().unwrap())
}

fn write(root: &Path, rel: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, "x").unwrap();
}

#[test]
fn the_parallel_walk_lists_what_the_sequential_walk_lists() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let root = tmp.path().join("repo");
    for unit in 0..200 {
        write(
            &root,
            &format!("live/env-{}/unit-{unit}/terragrunt.hcl", unit % 7),
        );
    }
    write(&root, "modules/vpc/main.tf");
    write(&root, ".git/config");
    write(&root, "live/.terragrunt-cache/x/terragrunt.hcl");
    symlink("../modules", root.join("live/mods")).unwrap();
    symlink("../modules/vpc/main.tf", root.join("live/main.tf")).unwrap();
    symlink("..", root.join("live/up")).unwrap();
    symlink(&outside, root.join("live/out")).unwrap();
    let root = std::fs::canonicalize(&root).unwrap();

    let expected = sequential(&root);
    assert!(expected.0.contains(&"live/mods/vpc/main.tf".to_string()));
    assert_eq!(expected.3.get("live/up"), Some(&Refusal::Loop));
    assert_eq!(expected.3.get("live/out"), Some(&Refusal::Escapes));
    for _ in 0..5 {
        assert_eq!(summary(walk_listing(&root, "", None, true)), expected);
    }
}

#[test]
fn past_the_linked_directory_limit_every_walk_refuses_the_same_links() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("repo");
    write(&root, "shared/terragrunt.hcl");
    for link in 0..MAX_LINKED_DIRS + 20 {
        let dir = root.join(format!("d{}", link % 37));
        std::fs::create_dir_all(&dir).unwrap();
        symlink("../shared", dir.join(format!("l{link}"))).unwrap();
    }
    let root = std::fs::canonicalize(&root).unwrap();

    let expected = sequential(&root);
    let too_many = |s: &Summary| {
        s.3.values()
            .filter(|r| **r == Refusal::TooManyLinks)
            .count()
    };
    assert_eq!(too_many(&expected), 20);
    for _ in 0..5 {
        assert_eq!(summary(walk_listing(&root, "", None, true)), expected);
    }
}

proptest::proptest! {
    /// The shortcut in `has_skipped_part` answers as splitting every path would.
    #[test]
    fn skipped_parts_as_splitting_finds_them(
        parts in proptest::collection::vec(
            proptest::sample::select(vec!["", ".", "..", "a", ".a", "a.", ".git", ".terraform",
                ".terragrunt-cache", ".terragrunt-stack", "x.git", ".gitx"]),
            0..6,
        )
    ) {
        let path = parts.join("/");
        let split = path.split('/').any(is_skipped_dir);
        proptest::prop_assert_eq!(has_skipped_part(&path), split, "{:?}", path);
    }
}
