//! Directory names as git keeps them, through `cascade serve` over the fake
//! GitHub with the real terraform: a backslash twin of a unit with an
//! `exclude` block does not hide the real unit's change, and a directory whose
//! name climbs out with `..` between backslashes (into another pull request's
//! checkout, or into another unit) is a failed unit that says to rename it,
//! with nothing run for it.

use crate::support::bot_world;

use bot_world::{REPO, World, world};
use std::path::Path;

async fn planned(w: &World, n: u64, head: &str) -> (String, String) {
    assert_eq!(w.send_pr(n, "opened").await, 202);
    w.until("the plan", |w| {
        w.checks_done(head) && !w.bot_texts(n).is_empty()
    })
    .await;
    let runs = w.fake.check_runs(REPO, head);
    let title = runs.last().unwrap().current().title.clone();
    (w.bot_texts(n).join("\n"), title)
}

/// Every `.terraform` directory under `dir`: where terraform ran.
fn initialised(dir: &Path) -> Vec<String> {
    let mut dirs: Vec<String> = walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_dir() && e.file_name() == ".terraform")
        .map(|e| e.path().parent().unwrap().display().to_string())
        .collect();
    dirs.sort();
    dirs
}

fn resource(name: &str) -> String {
    format!("resource \"terraform_data\" \"{name}\" {{\n  input = \"{name}\"\n}}\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backslash_twin_with_an_exclude_block_does_not_hide_the_real_change() {
    let w = world().await;
    let real = resource("real_marker");
    let twin = resource("twin_marker");
    let (n, head) = w.open_adding(
        "mallory",
        "twin",
        &[
            ("dev/net/base/terragrunt.hcl", ""),
            ("dev/net/base/main.tf", &real),
            (
                "dev/net\\base/terragrunt.hcl",
                "exclude {\n  if      = true\n  actions = [\"all\"]\n}\n",
            ),
            ("dev/net\\base/main.tf", &twin),
        ],
    );
    let (comment, title) = planned(&w, n, &head).await;
    assert!(!comment.contains("No changes"), "{comment}");
    assert!(
        comment.contains("| `dev/net/base` | 1 to add |"),
        "the real unit is planned: {comment}"
    );
    assert!(comment.contains("terraform_data.real_marker"), "{comment}");
    assert!(
        !comment.contains("twin_marker"),
        "the excluded twin is not: {comment}"
    );
    assert_ne!(title, "cascade: no changes");
    assert!(title.contains("to apply"), "{title}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn directories_climbing_out_with_backslashes_are_refused_and_nothing_runs() {
    let w = world().await;
    // Pull request 1 (the world's feature branch) has a checkout to climb into.
    let first = w.open_pr("alice", "feature", &w.head_sha.clone(), false);
    assert_eq!(w.send_pr(first, "opened").await, 202);
    let head_sha = w.head_sha.clone();
    w.until("the first plan", |w| w.checks_done(&head_sha))
        .await;
    let plan = w.plan_comment(first);
    assert!(plan.contains("| `global/dns` |"), "{plan}");

    let escape = format!("dev/x\\..\\..\\..\\pr-{first}\\global\\dns");
    let sideways = "dev/x\\..\\dns";
    let own = resource("own_marker");
    let (n, head) = w.open_adding(
        "mallory",
        "escape",
        &[
            ("dev/x/keep", ""),
            (&format!("{escape}/terragrunt.hcl"), ""),
            (&format!("{escape}/main.tf"), &own),
            (&format!("{sideways}/terragrunt.hcl"), ""),
            (&format!("{sideways}/main.tf"), &own),
        ],
    );
    let before = initialised(w.data.path());
    let (comment, title) = planned(&w, n, &head).await;
    for unit in [escape.as_str(), sideways] {
        assert!(
            comment.contains(&format!(
                "- `{unit}` — ``cascade runs nothing for `{unit}`: its path has a `..` part"
            )) && comment.contains("rename the directory"),
            "{unit}: {comment}"
        );
    }
    assert!(!comment.contains("own_marker"), "{comment}");
    assert!(title.contains("2 units failed to plan"), "{title}");
    // Terraform ran nowhere for them: not in their own directories, not in pull
    // request 1's checkout, not in `dev/dns`.
    let after = initialised(w.data.path());
    assert_eq!(before, after, "a new .terraform appeared");
    let checkouts: Vec<String> = after
        .iter()
        .filter(|d| d.contains("pr-2"))
        .cloned()
        .collect();
    assert!(checkouts.is_empty(), "{checkouts:?}");
}
