//! Unit names on disk: every unit's plan file, log and working directory are
//! named by `UnitPath::file_stem`, which must never give two distinct units
//! the same name (`a/b` and `a--b` once shared one and swapped plans) and must
//! stay a single, visible file name under the 255-byte limit whatever a pull
//! request names its directories.

use cascade::unit::UnitPath;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// The longest name made from a stem: `<wave>_<stem>.log` with a 6-digit wave.
fn longest_file_name(stem: &str) -> usize {
    "999999_".len() + stem.len() + ".tfplan".len()
}

fn check(stem: &str) {
    assert!(!stem.is_empty());
    assert!(longest_file_name(stem) < 255, "{} bytes", stem.len());
    assert!(!stem.contains('/') && !stem.contains('\0'), "{stem}");
    assert!(!stem.starts_with('.'), "{stem}");
    assert!(stem.is_ascii(), "{stem}");
}

/// Unit paths as a pull request may write them: components of letters, dots,
/// dashes, backslashes, unicode, spaces, `..` and `--`, short and very long.
fn unit_path() -> impl Strategy<Value = String> {
    let component = prop_oneof![
        "[a-z]{1,8}",
        Just("..".to_string()),
        Just(".".to_string()),
        Just("--".to_string()),
        "[a-z]{0,3}--[a-z]{0,3}",
        "[a-z]{0,3}\\\\[a-z]{0,3}",
        "[-._a-zA-Z0-9]{1,12}",
        "\\PC{1,6}",
        "[a-z]{200,300}",
    ];
    prop::collection::vec(component, 1..6).prop_map(|parts| parts.join("/"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn distinct_units_never_share_a_file_name(paths in prop::collection::vec(unit_path(), 2..40)) {
        let mut seen: BTreeMap<String, UnitPath> = BTreeMap::new();
        for path in paths {
            let unit = UnitPath::new(&path);
            let stem = unit.file_stem();
            check(&stem);
            if let Some(other) = seen.insert(stem.clone(), unit.clone()) {
                prop_assert_eq!(&other, &unit, "{} and {} share {}", other, unit, stem);
            }
        }
    }
}

#[test]
fn the_names_that_collided_no_longer_do_and_stay_readable() {
    let names: Vec<String> = [
        "a/b", "a--b", "a/-/b", ".", "..", "../x", "up/x", "a\\b", "a_b",
    ]
    .iter()
    .map(|p| UnitPath::new(p).file_stem())
    .collect();
    let unique: std::collections::BTreeSet<&String> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "{names:?}");
    assert!(names[0].starts_with("a--b-"), "{}", names[0]);
    assert!(names[3].starts_with("root-"), "{}", names[3]);
    for n in &names {
        check(n);
    }
    let long = UnitPath::new("x".repeat(10_000)).file_stem();
    check(&long);
}
