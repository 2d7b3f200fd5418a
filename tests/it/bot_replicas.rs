//! Three `cascade serve` replicas on one PostgreSQL database (a throwaway
//! cluster), the fake GitHub and the real terraform on the bundled example:
//! whichever replica a delivery reaches, and whichever dies, nothing is done
//! twice. Deliveries spread round-robin are each planned once by the replica
//! that stored them; one delivery sent to every replica is planned once; two
//! `/apply` of one id on two replicas apply once; a replica SIGKILLed mid-plan
//! or mid-apply is taken over (finished units not planned again, no unit
//! applied twice); locks taken through one replica hold through another; a
//! push received by one replica stops the plan another runs. Leases are 3 s
//! here (15 s by default), so takeovers happen within seconds.

use crate::support::bot_world;
use crate::support::fake_github;
use crate::support::postgres;
use crate::support::replicas;
use crate::support::wait;

use bot_world::{REPO, World, push_change, world_unserved};
use cascade::server::ServeConfig;
use fake_github::FileChange;
use replicas::{
    InProcess, Process, Terraform, bot_comments_of, in_process, per_unit, post, processes,
    pull_request,
};
use std::ffi::OsStr;
use std::time::Duration;

/// Generous: three replicas and terraform share two cores with other builds.
const LONG: Duration = Duration::from_secs(240);

/// Every unit of the example: what a change to `root.hcl` plans.
const ALL_UNITS: usize = 11;

fn comments_of(w: &World, n: u64) -> impl Fn() -> String + '_ {
    move || format!("bot comments on #{n}: {:#?}", w.bot_texts(n))
}

/// Sends pull request `n`'s `action` event to the replica at `hook`: the status.
async fn send(w: &World, n: u64, action: &str, hook: &str) -> u16 {
    post(&w.fake.pull_request_event(REPO, n, action), hook).await
}

/// A pull request changing `root.hcl`: every unit plans.
fn wide_pull_request(w: &World) -> (u64, String) {
    pull_request(w, "wide", "root.hcl", &["root.hcl"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_spread_round_robin_are_each_planned_once_by_the_replica_that_stored_them() {
    let (w, r, database) = three_in_process(|_| {}).await;
    // Leaves of the graph, two pull requests each: the second of a pair is told the
    // first holds the lock (taken through another replica), and still planned once.
    let units = ["dev/dns", "prod/dns", "prod/monitoring"];
    let prs: Vec<(u64, String)> = (0..6)
        .map(|i| {
            let file = format!("{}/main.tf", units[i % 3]);
            pull_request(&w, &format!("change-{i}"), &file, &[&file])
        })
        .collect();
    for (i, (n, _)) in prs.iter().enumerate() {
        let delivery = w.fake.pull_request_event(REPO, *n, "opened");
        assert_eq!(post(&delivery, &r.hook(i % 3)).await, 202);
    }
    for (n, head) in &prs {
        wait::until(
            "every pull request's plan",
            LONG,
            r.jobs(),
            || w.looking(|| w.checks_done(head)),
            comments_of(&w, *n),
        )
        .await;
    }
    // Room for a duplicate to show: past a lease and a sweep.
    tokio::time::sleep(replicas::LEASE * 2).await;
    for (n, head) in &prs {
        let texts = w.bot_texts(*n);
        assert_eq!(texts.len(), 1, "one plan comment on #{n}: {texts:#?}");
        assert!(texts[0].starts_with("<!-- cascade:plan"), "{}", texts[0]);
        assert_eq!(
            w.fake.check_runs(REPO, head).len(),
            1,
            "one check run on #{n}"
        );
    }
    // Each replica processed the two deliveries it stored: no stealing from a live one.
    let pool = sqlx::PgPool::connect(&database).await.unwrap();
    let owners: Vec<(Option<String>, String, i64)> = sqlx::query_as(
        "SELECT owner, status, COUNT(*) FROM deliveries GROUP BY owner, status ORDER BY owner",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let mut expected: Vec<(Option<String>, String, i64)> = r
        .servers
        .iter()
        .map(|s| (Some(s.bot.replica_id().to_string()), "processed".into(), 2))
        .collect();
    expected.sort();
    assert_eq!(owners, expected);
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_delivery_sent_to_every_replica_is_planned_once() {
    let (w, r, _) = three_in_process(|_| {}).await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    let delivery = w.fake.pull_request_event(REPO, n, "opened");
    let hooks: Vec<String> = (0..3).map(|i| r.hook(i)).collect();
    let (a, b, c) = tokio::join!(
        post(&delivery, &hooks[0]),
        post(&delivery, &hooks[1]),
        post(&delivery, &hooks[2])
    );
    let mut statuses = [a, b, c];
    statuses.sort();
    assert_eq!(
        statuses,
        [200, 200, 202],
        "one stores it, two have it already"
    );
    planned(&w, &r, n, &w.head_sha).await;
    tokio::time::sleep(replicas::LEASE * 2).await;
    assert_eq!(w.bot_texts(n).len(), 1, "{:#?}", w.bot_texts(n));
    assert_eq!(w.fake.check_runs(REPO, &w.head_sha).len(), 1);
    // Sent again later, to each: still one.
    for i in 0..3 {
        assert_eq!(post(&delivery, &r.hook(i)).await, 200);
    }
    tokio::time::sleep(replicas::LEASE).await;
    assert_eq!(w.bot_texts(n).len(), 1);
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_applies_of_one_id_on_two_replicas_at_once_apply_each_unit_once() {
    let terraform = Terraform::new();
    let (w, r, _) = three_in_process(|c| {
        c.terraform_bin = terraform.bin().to_string_lossy().into_owned();
    })
    .await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    assert_eq!(send(&w, n, "opened", &r.hook(0)).await, 202);
    planned(&w, &r, n, &w.head_sha).await;
    let id = w.plan_id(n);
    w.fake.set_permission(REPO, "bob", "write");
    w.fake.set_permission(REPO, "carol", "write");
    w.fake.approve(REPO, n, "bob");
    let command = format!("/apply {id}");
    let first = w
        .fake
        .issue_comment_event(&w.fake.user_comment(REPO, n, "bob", &command));
    let second = w
        .fake
        .issue_comment_event(&w.fake.user_comment(REPO, n, "carol", &command));
    let (one, two) = (r.hook(1), r.hook(2));
    let (a, b) = tokio::join!(post(&first, &one), post(&second, &two));
    assert_eq!((a, b), (202, 202));
    wait::until(
        "the apply and the refusal",
        LONG,
        r.jobs(),
        || w.looking(|| w.bot_texts(n).len() >= 3),
        comments_of(&w, n),
    )
    .await;
    tokio::time::sleep(replicas::LEASE * 2).await;
    let texts = w.bot_texts(n);
    assert_eq!(bot_comments_of(&w, n, "apply").len(), 1, "{texts:#?}");
    assert_eq!(texts.len(), 3, "a plan, an apply, one refusal: {texts:#?}");
    assert!(
        texts.iter().any(|t| t.contains("already applied")),
        "{texts:#?}"
    );
    let applies = per_unit(&terraform.calls_of("apply", n));
    assert!(applies.contains_key("global/dns"), "{applies:#?}");
    assert!(applies.values().all(|c| *c == 1), "{applies:#?}");
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_taken_through_one_replica_hold_through_another_and_unlock_through_a_third() {
    let (w, r, _) = three_in_process(|_| {}).await;
    let first = w.open_pr("alice", "feature", &w.head_sha, false);
    assert_eq!(send(&w, first, "opened", &r.hook(0)).await, 202);
    planned(&w, &r, first, &w.head_sha).await;
    let other = push_change(&w, "other", "global/dns/main.tf", "a competing change");
    let second = w.open_pr("dave", "other", &other, false);
    assert_eq!(send(&w, second, "opened", &r.hook(1)).await, 202);
    wait::until(
        "the second plan",
        LONG,
        r.jobs(),
        || w.looking(|| w.checks_done(&other)),
        comments_of(&w, second),
    )
    .await;
    let text = &w.bot_texts(second)[0];
    assert!(text.contains("locked by #1"), "{text}");
    let check = w.fake.check_runs(REPO, &other)[0].current().clone();
    assert_eq!(check.conclusion.as_deref(), Some("action_required"));
    // /unlock on the first, through the third replica: the second plans by itself.
    w.fake.set_permission(REPO, "bob", "write");
    let unlock = w
        .fake
        .issue_comment_event(&w.fake.user_comment(REPO, first, "bob", "/unlock"));
    assert_eq!(post(&unlock, &r.hook(2)).await, 202);
    wait::until(
        "the second planned without the lock",
        LONG,
        r.jobs(),
        || w.looking(|| !w.bot_texts(second)[0].contains("locked by #1")),
        comments_of(&w, second),
    )
    .await;
    assert_eq!(w.bot_texts(second).len(), 1, "the same comment, edited");
    wait::until(
        "the reply to /unlock",
        LONG,
        r.jobs(),
        || w.looking(|| w.bot_texts(first).len() == 2),
        comments_of(&w, first),
    )
    .await;
    let released = &w.bot_texts(first)[1];
    assert!(released.starts_with("Released 3 locks"), "{released}");
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_received_by_one_replica_stops_the_plan_another_runs() {
    let terraform = Terraform::new();
    terraform.set_sleep("plan", 1.5);
    let (w, r, _) = three_in_process(|c| {
        c.terraform_bin = terraform.bin().to_string_lossy().into_owned();
        c.parallelism = 1;
    })
    .await;
    let (n, _) = wide_pull_request(&w);
    assert_eq!(send(&w, n, "opened", &r.hook(1)).await, 202);
    let b = r.data(1);
    wait::until(
        "replica B planning",
        LONG,
        Vec::new(),
        || w.looking(|| !terraform.calls_of("plan", n).is_empty()),
        comments_of(&w, n),
    )
    .await;
    // A new head, received by replica A.
    let head = push_change(&w, "wide", "global/dns/main.tf", "a newer head");
    w.fake.push(
        REPO,
        n,
        &head,
        vec![FileChange::modified("global/dns/main.tf")],
    );
    let pushed_at = now_ms();
    assert_eq!(send(&w, n, "synchronize", &r.hook(0)).await, 202);
    wait::until(
        "the new head's plan",
        LONG,
        r.jobs(),
        || w.looking(|| w.checks_done(&head)),
        comments_of(&w, n),
    )
    .await;
    let by_b: Vec<_> = terraform
        .calls_of("plan", n)
        .into_iter()
        .filter(|c| c.by(&b))
        .collect();
    assert!(
        by_b.len() < ALL_UNITS,
        "B's plan of the old head was stopped: {by_b:#?}"
    );
    // B stops within a heartbeat or so (0.6 s here): generous for a loaded machine.
    let late: Vec<_> = by_b
        .iter()
        .filter(|c| c.at_ms > pushed_at + 6_000)
        .collect();
    assert!(late.is_empty(), "B kept planning after the push: {late:#?}");
    let plans = bot_comments_of(&w, n, "plan");
    assert_eq!(plans.len(), 1, "{:#?}", w.bot_texts(n));
    assert!(
        plans[0].contains(&format!("Head `{}`", &head[..7])),
        "the final plan is the new head's: {}",
        plans[0]
    );
    r.shutdown().await;
}

/// Three in-process replicas on a fresh database, `tweak` applied to each one's
/// configuration, and a world without a server of its own: the database's URL too.
async fn three_in_process(tweak: impl Fn(&mut ServeConfig)) -> (World, InProcess, String) {
    let database = postgres::database().await;
    let w = world_unserved("").await;
    let r = in_process(&w, &database, 3, tweak).await;
    (w, r, database)
}

/// Waits until `n`'s plan of `head` is done (its check run completed).
async fn planned(w: &World, r: &InProcess, n: u64, head: &str) {
    let done = || w.checks_done(head);
    wait::until("the plan", LONG, r.jobs(), done, comments_of(w, n)).await;
    let plan = w.plan_comment(n);
    assert!(plan.contains(&format!("Head `{}`", &head[..7])), "{plan}");
}

/// Three replica processes on a fresh database, running `terraform`, and a pull
/// request changing `root.hcl` (every unit) sent to the first: the world, the
/// replicas, the pull request and its head.
async fn wide_on_processes(terraform: &Terraform) -> (World, Vec<Process>, u64, String) {
    let database = postgres::database().await;
    let w = world_unserved("").await;
    let bin = terraform.bin();
    let r = processes(
        &w,
        &database,
        3,
        replicas::LEASE,
        &[OsStr::new("--terraform-bin"), bin.as_os_str()],
    )
    .await;
    let (n, head) = wide_pull_request(&w);
    assert_eq!(send(&w, n, "opened", &r[0].hook()).await, 202);
    (w, r, n, head)
}

/// SIGKILLs `victim` once three units of `n` have started `verb` (the third still in
/// flight): the calls it started, oldest first.
async fn kill_during(
    terraform: &Terraform,
    victim: &mut Process,
    verb: &str,
    n: u64,
    w: &World,
) -> Vec<replicas::Call> {
    wait::until(
        &format!("three units' {verb} started"),
        LONG,
        Vec::new(),
        || w.looking(|| terraform.calls_of(verb, n).len() >= 3),
        comments_of(w, n),
    )
    .await;
    victim.kill();
    let dead = victim.data();
    let started: Vec<_> = terraform
        .calls_of(verb, n)
        .into_iter()
        .filter(|c| c.by(&dead))
        .collect();
    assert!(
        !started.is_empty() && started.len() < ALL_UNITS,
        "killed mid-{verb}: {started:#?}"
    );
    started
}

/// The comments on `n` and every replica's log, for a timeout's message.
fn logs(w: &World, n: u64, r: &[Process]) -> String {
    let mut text = comments_of(w, n)();
    for (i, p) in r.iter().enumerate() {
        text += &format!("\nreplica {i}:\n{}", p.log());
    }
    text
}

fn now_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_mid_plan_is_taken_over_without_planning_finished_units_again() {
    let terraform = Terraform::new();
    terraform.set_sleep("plan", 1.0);
    let (w, mut r, n, head) = wide_on_processes(&terraform).await;
    let by_dead = kill_during(&terraform, &mut r[0], "plan", n, &w).await;
    let survivors = (r[1].data(), r[2].data());
    wait::until(
        "the plan finished by another replica",
        LONG,
        Vec::new(),
        || w.looking(|| w.checks_done(&head)),
        || logs(&w, n, &r),
    )
    .await;
    tokio::time::sleep(replicas::LEASE * 2).await;
    let calls = terraform.calls_of("plan", n);
    let counts = per_unit(&calls);
    assert_eq!(counts.len(), ALL_UNITS, "every unit planned: {counts:#?}");
    // One unit at a time: every unit the dead replica started before its last had
    // finished, and is not planned again; at most the one in flight is.
    let (in_flight, finished) = by_dead.split_last().unwrap();
    for c in finished {
        assert_eq!(
            counts[c.unit()],
            1,
            "{} planned again: {calls:#?}",
            c.unit()
        );
    }
    assert!(counts[in_flight.unit()] <= 2, "{calls:#?}");
    assert!(
        counts
            .iter()
            .all(|(unit, c)| *c == 1 || unit == in_flight.unit()),
        "{counts:#?}"
    );
    assert!(
        calls
            .iter()
            .any(|c| c.by(&survivors.0) || c.by(&survivors.1)),
        "taken over by another replica"
    );
    let texts = w.bot_texts(n);
    assert_eq!(texts.len(), 1, "one plan comment: {texts:#?}");
    assert!(texts[0].starts_with("<!-- cascade:plan"), "{}", texts[0]);
    assert_eq!(w.fake.check_runs(REPO, &head).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_mid_apply_is_taken_over_without_applying_a_unit_twice() {
    let terraform = Terraform::new();
    let (w, mut r, n, head) = wide_on_processes(&terraform).await;
    wait::until(
        "the plan",
        LONG,
        Vec::new(),
        || w.looking(|| w.checks_done(&head)),
        comments_of(&w, n),
    )
    .await;
    let id = w.plan_id(n);
    w.fake.set_permission(REPO, "bob", "write");
    w.fake.approve(REPO, n, "bob");
    terraform.set_sleep("apply", 3.0);
    let apply =
        w.fake
            .issue_comment_event(&w.fake.user_comment(REPO, n, "bob", &format!("/apply {id}")));
    assert_eq!(post(&apply, &r[1].hook()).await, 202);
    kill_during(&terraform, &mut r[1], "apply", n, &w).await;
    let survivors = (r[0].data(), r[2].data());
    wait::until(
        "the apply's result from another replica",
        LONG,
        Vec::new(),
        || w.looking(|| !bot_comments_of(&w, n, "apply").is_empty()),
        || logs(&w, n, &r),
    )
    .await;
    tokio::time::sleep(replicas::LEASE * 2).await;
    let calls = terraform.calls_of("apply", n);
    let counts = per_unit(&calls);
    assert!(
        counts.values().all(|c| *c == 1),
        "no unit applied twice: {calls:#?}"
    );
    assert!(
        calls
            .iter()
            .any(|c| c.by(&survivors.0) || c.by(&survivors.1)),
        "the rest applied by another replica: {calls:#?}"
    );
    let results = bot_comments_of(&w, n, "apply");
    assert_eq!(results.len(), 1, "{:#?}", w.bot_texts(n));
    let result = &results[0];
    // The unit in flight at the kill: its terraform outlived the replica, and its
    // result was recorded, not applied again.
    assert_eq!(
        result
            .matches("applied by a terraform that an earlier cascade process started")
            .count(),
        1,
        "{result}"
    );
    // The units planned against stand-ins for what they read (provisional) change once
    // that is applied: they and their dependents wait for a new plan's approval, as
    // after a restart on SQLite.
    assert!(result.contains("the plan changed"), "{result}");
    let at = result.find("/apply ").expect("the new plan's /apply line");
    assert_ne!(
        &result[at + 7..at + 19],
        id,
        "a new id to approve: {result}"
    );
    let check = w
        .fake
        .check_runs(REPO, &head)
        .last()
        .unwrap()
        .current()
        .clone();
    assert_eq!(
        check.conclusion.as_deref(),
        Some("action_required"),
        "{check:?}"
    );
}
