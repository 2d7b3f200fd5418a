//! One plan id is applied by at most one process at a time: a claim in the
//! store, taken before an apply (or a recovery), heartbeated while it runs and
//! released at the end. A claim may be taken over only from a dead owner: on
//! this host with its process gone (or, for this very process, an owner it
//! does not know: a previous process with the same pid, as in a restarted
//! container), or anywhere with a heartbeat older than the lease.

use super::Engine;
use crate::exec::Executor;
use crate::plan::PlanId;
use crate::store::{ApplyClaim, PlanKey, RunStore};
use std::collections::HashSet;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A claim whose heartbeat is older than this (seconds) belongs to a dead owner.
pub const LEASE_SECS: i64 = 60;
/// How often a held claim is heartbeated: well inside the lease.
const HEARTBEAT: Duration = Duration::from_secs(20);

/// The owners of claims this process holds now.
static LIVE_OWNERS: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Default::default);

/// This host's name, as claims record it.
pub fn this_host() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "unknown-host".into())
}

/// Whether the owner of `claim` may still be applying at `now`.
pub fn owner_alive(claim: &ApplyClaim, now: i64) -> bool {
    if now - claim.heartbeat_at > LEASE_SECS {
        return false;
    }
    if claim.host != this_host() {
        return true;
    }
    if claim.pid == std::process::id() {
        return LIVE_OWNERS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&claim.owner);
    }
    let Ok(pid) = i32::try_from(claim.pid) else {
        return false;
    };
    // EPERM: the process exists under another user.
    !matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
        Err(nix::errno::Errno::ESRCH)
    )
}

/// A claim this process holds, heartbeated until released. Dropped without
/// a release (its apply's future was dropped), it stops heartbeating and its
/// owner counts as dead at once, so the next apply may take it over.
pub(super) struct HeldClaim {
    claim: ApplyClaim,
    stop_heartbeat: CancellationToken,
}

impl Drop for HeldClaim {
    fn drop(&mut self) {
        self.stop_heartbeat.cancel();
        LIVE_OWNERS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.claim.owner);
    }
}

impl<E: Executor, S: RunStore> Engine<E, S> {
    /// Takes the claim on applying `id` of `repo`, or answers who holds it.
    pub(super) async fn take_claim(
        &self,
        repo: &PlanKey,
        id: &PlanId,
    ) -> anyhow::Result<Result<HeldClaim, ApplyClaim>> {
        let claim = ApplyClaim {
            repo: repo.clone(),
            plan_id: id.clone(),
            owner: uuid::Uuid::new_v4().simple().to_string(),
            pid: std::process::id(),
            host: this_host(),
            heartbeat_at: self.clock.now(),
        };
        LIVE_OWNERS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(claim.owner.clone());
        match self.store.insert_apply_claim(&claim).await {
            Ok(None) => {}
            Ok(Some(holder)) if !owner_alive(&holder, self.clock.now()) => {
                tracing::warn!(plan = %id, pid = holder.pid, host = %holder.host, "taking over the apply claim of a dead process");
                if !matches!(
                    self.store.take_over_apply_claim(&holder, &claim).await,
                    Ok(true)
                ) {
                    return self.refused(&claim, repo, id).await;
                }
            }
            Ok(Some(holder)) => {
                self.forget_owner(&claim.owner);
                return Ok(Err(holder));
            }
            Err(e) => {
                self.forget_owner(&claim.owner);
                return Err(e);
            }
        }
        let stop_heartbeat = CancellationToken::new();
        let (store, clock, stop) = (
            self.store.clone(),
            self.clock.clone(),
            stop_heartbeat.clone(),
        );
        let (repo, id, owner) = (repo.clone(), id.clone(), claim.owner.clone());
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(HEARTBEAT) => {}
                    _ = stop.cancelled() => return,
                }
                match store
                    .heartbeat_apply_claim(&repo, &id, &owner, clock.now())
                    .await
                {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::error!(plan = %id, "another process took over this apply's claim (was this one suspended past the lease?)");
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(plan = %id, error = %e, "cannot heartbeat the apply claim")
                    }
                }
            }
        });
        Ok(Ok(HeldClaim {
            claim,
            stop_heartbeat,
        }))
    }

    /// Someone else won the race for a dead owner's claim: answers the new holder.
    async fn refused(
        &self,
        claim: &ApplyClaim,
        repo: &PlanKey,
        id: &PlanId,
    ) -> anyhow::Result<Result<HeldClaim, ApplyClaim>> {
        self.forget_owner(&claim.owner);
        let holder = self.store.apply_claim(repo, id).await?;
        Ok(Err(holder.unwrap_or_else(|| claim.clone())))
    }

    fn forget_owner(&self, owner: &str) {
        LIVE_OWNERS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(owner);
    }

    /// Stops heartbeating and deletes the claim.
    pub(super) async fn release_claim(&self, held: HeldClaim) {
        let c = &held.claim;
        if let Err(e) = self
            .store
            .release_apply_claim(&c.repo, &c.plan_id, &c.owner)
            .await
        {
            tracing::error!(plan = %c.plan_id, error = %e, "cannot release the apply claim; it expires after the lease");
        }
    }
}
