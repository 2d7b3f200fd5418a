//! A pull request adding a stack whose units come from a unit catalog on the forge the
//! server serves (issue 23), through `cascade serve` over the fake GitHub: the server
//! fetches the catalog over smart HTTP with the installation's token, and the plan's
//! waves follow the catalog units' real edges (`service` needs `db` and `role`, `role`
//! needs `db`) instead of all sharing wave 1; the comment names the source and the commit
//! its ref resolved to. A source on a host nobody listed is not fetched, and its unit says
//! why.

use crate::support::bot_world;
use crate::support::{git, write_file};

use bot_world::{World, world};
use std::path::Path;

/// The catalog, a bare repository the fake serves as `acme/catalog`, tag `v1`.
fn catalog_origin(tmp: &Path) -> String {
    let work = tmp.join("catalog-work");
    write_file(&work, "units/db/terragrunt.hcl", "inputs = {}\n");
    write_file(
        &work,
        "units/role/terragrunt.hcl",
        "dependency \"db\" {\n  config_path = \"../db\"\n}\n",
    );
    write_file(
        &work,
        "units/service/terragrunt.hcl",
        "dependency \"db\" {\n  config_path = \"../db\"\n}\n\ndependency \"role\" {\n  config_path = \"../role\"\n}\n",
    );
    git(&work, &["init", "-q"]);
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "catalog"]);
    git(&work, &["tag", "v1"]);
    let origin = tmp.join("catalog.git").to_str().unwrap().to_string();
    git(
        tmp,
        &["clone", "-q", "--bare", work.to_str().unwrap(), &origin],
    );
    origin
}

fn unit(name: &str, source: &str) -> String {
    format!("unit \"{name}\" {{\n  source = \"{source}\"\n  path   = \"{name}\"\n}}\n\n")
}

async fn planned(w: &World, n: u64, head: &str) -> String {
    assert_eq!(w.send_pr(n, "opened").await, 202);
    w.until("the plan", |w| {
        w.checks_done(head) && !w.bot_texts(n).is_empty()
    })
    .await;
    w.bot_texts(n).join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stack_from_the_forges_catalog_is_fetched_with_the_token_and_resolved() {
    let w = world().await;
    let tmp = tempfile::tempdir().unwrap();
    let origin = catalog_origin(tmp.path());
    w.fake.add_repo("acme/catalog", Some(Path::new(&origin)));
    let base = format!("git::{}/acme/catalog.git", w.fake.url());
    let stack = [
        unit("db", &format!("{base}//units/db?ref=v1")),
        unit("role", &format!("{base}//units/role?ref=v1")),
        unit("service", &format!("{base}//units/service?ref=v1")),
        // Not the forge, not listed: never fetched.
        unit(
            "stray",
            "git::https://git.example.com/acme/catalog.git//units/db?ref=v1",
        ),
    ]
    .concat();
    let (n, head) = w.open_adding(
        "alice",
        "stack",
        &[("dev/app/terragrunt.stack.hcl", &stack)],
    );
    let comment = planned(&w, n, &head).await;
    // There is no terragrunt here to generate the stack, so the first unit fails and the
    // rest are skipped; what discovery knew shows in why each was skipped and in what is
    // left unresolved: only the stray unit, not the three fetched ones.
    assert!(comment.contains("#### ❓ Unresolved (1)"), "{comment}");
    for fetched in ["db", "role", "service"] {
        assert!(
            !comment.contains(&format!(
                "- `dev/app/.terragrunt-stack/{fetched}` — ``dev/app/terragrunt.stack.hcl"
            )),
            "{fetched} is resolved: {comment}"
        );
    }
    for after_db in ["role", "service", "stray"] {
        assert!(
            comment.contains(&format!(
                "- `dev/app/.terragrunt-stack/{after_db}` — `dev/app/.terragrunt-stack/db failed to plan`"
            )),
            "{after_db} waits for db: {comment}"
        );
    }
    assert!(
        comment.contains("`git.example.com` is not on the allow-list"),
        "{comment}"
    );
    // The catalog was fetched from the fake, with the installation's token (the fake's
    // git refuses any other request); the stray host was never asked.
    let fetched = w
        .fake
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/acme/catalog.git/"))
        .count();
    assert!(fetched > 0, "the catalog was fetched");
    assert!(!comment.contains("did not fetch"), "{comment}");
    // The comment names the source and the commit the tag resolved to, once for the three
    // units it gave; never the token.
    let commit = git(Path::new(&origin), &["rev-parse", "v1^{commit}"]);
    let row = format!(
        "| `{}/acme/catalog.git` | `v1` | `{}` | 3 |",
        w.fake.url(),
        &commit[..12]
    );
    assert!(comment.contains("#### 📦 Remote sources (1)"), "{comment}");
    assert!(comment.contains(&row), "{row}: {comment}");
}
