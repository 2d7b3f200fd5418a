//! `/apply <id> [unit globs]` over the fake GitHub with the real terraform: a subset that
//! leaves out a unit it depends on is refused, naming it and the command to type; a
//! subset closed under its dependencies applies only its units, and the rest becomes a
//! new plan with its own id, which applies. `/plan unit…` takes globs too, and says when
//! one plans nothing.

use crate::support::bot_world::{REPO, world};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subset_applies_only_its_units_and_must_hold_what_they_depend_on() {
    let w = world().await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    w.send_pr(n, "opened").await;
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    let id = w.plan_id(n);
    w.fake.set_permission(REPO, "bob", "write");
    w.fake.approve(REPO, n, "bob");
    // dev/dns depends on global/dns, which this plan changes: refused, nothing applied.
    w.comment(n, "bob", &format!("/apply {id} dev/dns")).await;
    let refused = w.nth_reply(n, 2).await;
    assert!(refused.contains("`global/dns`"), "{refused}");
    assert!(
        refused.contains(&format!("/apply {id} dev/dns global/dns"))
            || refused.contains(&format!("/apply {id} global/dns dev/dns")),
        "the command to type instead: {refused}"
    );
    assert!(!w.applied(n));
    // global/dns alone is closed under its dependencies: only it is applied.
    w.comment(n, "bob", &format!("/apply {id} global/*")).await;
    w.until("the apply result", |w| w.applied(n)).await;
    let result = w.apply_comment(n);
    let applied = crate::support::applied_units(&result);
    assert_eq!(applied, ["global/dns"], "{result}");
    assert!(result.contains("cascade applied part of"), "{result}");
    // The rest was planned again after global/dns: its fresh fingerprints, not the
    // provisional ones, so it applies as shown.
    assert!(
        result.contains("`cf805436462a`") || !result.contains("`c2fa76cbcbd5`"),
        "{result}"
    );
    assert!(!result.contains("`c2fa76cbcbd5`"), "{result}");
    let at = result.find("/apply ").expect("the rest's new plan id");
    let rest: String = result[at + 7..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    assert_ne!(rest, id, "{result}");
    // The rest applies under its own id.
    w.comment(n, "bob", &format!("/apply {rest}")).await;
    w.until("the second apply result", |w| {
        w.looking(|| {
            w.fake
                .bot_comments(REPO, n)
                .iter()
                .filter(|c| c.body.starts_with("<!-- cascade:apply"))
                .count()
                >= 2
        })
    })
    .await;
    let second = w.apply_comment(n);
    let mut applied = crate::support::applied_units(&second);
    applied.sort();
    assert_eq!(applied, ["dev/dns", "prod/dns"], "{second}");
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_takes_globs_and_says_when_one_plans_nothing() {
    let w = world().await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    w.send_pr(n, "opened").await;
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    assert!(w.plan_comment(n).contains("`prod/dns`"));
    w.fake.set_permission(REPO, "bob", "write");
    // A glob matching nothing this pull request plans: said, and the plan left as it was.
    w.comment(n, "bob", "/plan stage/** dev/*").await;
    let refused = w.nth_reply(n, 2).await;
    assert_eq!(
        refused,
        "Nothing was planned: `stage/**` matches no unit this pull request affects, nor a \
         unit that one it affects depends on. Comment `/plan` to re-plan every unit it \
         affects, or name units as the plan comment lists them (a path, or a glob like \
         `live/dev/**`)."
    );
    // `dev/*` matches dev/dns among the affected units: only it is planned again.
    w.comment(n, "bob", "/plan dev/*").await;
    w.until("the plan of dev/*", |w| {
        w.looking(|| !w.fake.bot_comments(REPO, n)[0].body.contains("`prod/dns`"))
    })
    .await;
    let plan = w.plan_comment(n);
    assert!(plan.contains("`dev/dns`"), "{plan}");
    assert!(!plan.contains("`global/dns`"), "{plan}");
    w.finish().await;
}
