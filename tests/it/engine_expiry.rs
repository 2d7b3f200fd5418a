//! Plan expiry, the engine's rule (`engine::current_plan`): a plan older than `plan_ttl`
//! is refused and nothing is applied; planning again makes it fresh; an apply already
//! begun continues however old its plan is. Time is moved by hand, with the scripted
//! executor of `engine_rules`.

use crate::engine_rules::{Fixture, Plan, REPO, Scripted, fixture};
use cascade::clock::{Clock, SystemClock};
use cascade::config::PlanTtl;
use cascade::engine::{ApplyError, ApplyOutcome, RunRules, UnitDir};
use cascade::plan::PlanId;
use cascade::store::{PlanKey, PlannedUnit};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

const DAY: u64 = 24 * 3600;

/// The wall clock, moved on by hand.
#[derive(Default)]
struct Later(AtomicI64);

impl Later {
    fn pass(&self, span: Duration) {
        self.0.fetch_add(span.as_secs() as i64, Ordering::SeqCst);
    }
}

impl Clock for Later {
    fn now(&self) -> i64 {
        SystemClock.now() + self.0.load(Ordering::SeqCst)
    }
}

async fn fixture_with_clock(exec: Scripted) -> (Fixture, Arc<Later>) {
    let mut f = fixture(exec).await;
    let clock = Arc::new(Later::default());
    f.engine.clock = clock.clone();
    (f, clock)
}

fn rules(ttl_days: u64) -> RunRules {
    let mut rules = RunRules::default();
    rules.plan_ttl = PlanTtl::new(Duration::from_secs(ttl_days * DAY)).unwrap();
    rules
}

/// Plans `engine_rules`' targets at `h1`; its plan id.
async fn plan(f: &Fixture) -> PlanId {
    crate::engine_rules::plan(f, "h1").await.plan.id
}

async fn apply(f: &Fixture, id: &PlanId, ttl_days: u64) -> Result<ApplyOutcome, ApplyError> {
    let dir_for =
        |u: &PlannedUnit| UnitDir::of(Path::new("/nowhere"), Path::new("/nowhere"), &u.path);
    f.engine
        .apply(
            &PlanKey::from_stored(REPO),
            id,
            "h1",
            &dir_for,
            rules(ttl_days),
            |_| {},
        )
        .await
        .unwrap()
}

fn scripted() -> Scripted {
    let exec = Scripted::default();
    for unit in ["vpc", "db", "app", "dns"] {
        exec.script(unit, &[Plan::Creates(1, "v1")]);
    }
    exec
}

#[tokio::test]
async fn an_expired_plan_id_is_refused_and_planning_again_makes_it_fresh() {
    let (f, clock) = fixture_with_clock(scripted()).await;
    let id = plan(&f).await;
    clock.pass(Duration::from_secs(3 * DAY + 7200));
    let refused = apply(&f, &id, 3).await.unwrap_err();
    assert!(
        matches!(&refused, ApplyError::Expired { id: named, age, ttl }
            if named == &id && age.as_secs() >= 3 * DAY + 7200 && ttl.get().as_secs() == 3 * DAY),
        "{refused}"
    );
    assert_eq!(
        refused.to_string(),
        format!(
            "plan {id} is 3 days 2 hours old, older than `plan_ttl` (3 days); run `cascade plan` \
             again and apply the new id"
        )
    );
    assert!(f.engine.executor.applied().is_empty());
    // The same head and the same changes: the same id, made again now.
    assert_eq!(plan(&f).await, id);
    let outcome = apply(&f, &id, 3).await.unwrap();
    assert!(outcome.complete());
}

#[tokio::test]
async fn the_ttl_is_the_callers_and_a_plan_within_it_is_applied() {
    let (f, clock) = fixture_with_clock(scripted()).await;
    let id = plan(&f).await;
    clock.pass(Duration::from_secs(3 * DAY + 7200));
    assert!(matches!(
        apply(&f, &id, 3).await,
        Err(ApplyError::Expired { .. })
    ));
    assert!(apply(&f, &id, 7).await.unwrap().complete());
}

#[tokio::test]
async fn an_apply_begun_before_the_plan_expired_continues_after() {
    let exec = scripted();
    exec.failing_applies.lock().unwrap().push("vpc".into());
    let (f, clock) = fixture_with_clock(exec).await;
    let id = plan(&f).await;
    let outcome = apply(&f, &id, 1).await.unwrap();
    assert!(!outcome.complete());
    clock.pass(Duration::from_secs(2 * DAY));
    f.engine.executor.failing_applies.lock().unwrap().clear();
    // Refusing it would leave dns applied and the rest not, until a new review.
    let outcome = apply(&f, &id, 1).await.unwrap();
    assert!(outcome.complete());
}
