//! What a job on one pull request works with: the bot, the pull request's key and value,
//! its forge (opened once per job) and how that forge spells things, and the few acts
//! every flow does on it (reply, set the check, save or move its stored row). Owns no
//! decision: the flows (`plan`, `apply`, `commands`) decide, and call these to act.
//! Never used for drift work, which has no pull request.

use super::plan::current_pr;
use super::publish;
use super::{Bot, WorkKey};
use crate::forge::{CheckOutput, Forge, ForgeRef, PullRequest, Spelling};
use crate::store::{BotStore, PrState, PullRequestRecord};
use std::sync::Arc;

/// One job's pull request and the handles to act on it.
pub struct PrCtx {
    pub bot: Arc<Bot>,
    pub key: WorkKey,
    pub pr: PullRequest,
    /// The pull request's forge, opened for this job.
    pub forge: Forge,
    pub spelling: &'static Spelling,
}

impl PrCtx {
    /// The context of `pr`, on a forge the job has already opened.
    pub fn new(bot: &Arc<Bot>, key: &WorkKey, pr: PullRequest, forge: Forge) -> PrCtx {
        PrCtx {
            bot: bot.clone(),
            key: key.clone(),
            spelling: forge.spelling(),
            pr,
            forge,
        }
    }

    /// The context of `pr`, opening its forge.
    pub async fn open(bot: &Arc<Bot>, key: &WorkKey, pr: PullRequest) -> anyhow::Result<PrCtx> {
        let forge = bot.forges.open(pr.forge).await?;
        Ok(PrCtx::new(bot, key, pr, forge))
    }

    /// The context of the pull request as the forge at `at` has it now (a hook said too
    /// little, or no hook said anything).
    pub async fn read(bot: &Arc<Bot>, key: &WorkKey, at: ForgeRef) -> anyhow::Result<PrCtx> {
        let forge = bot.forges.open(at).await?;
        let pr = current_pr(&forge, key).await?;
        Ok(PrCtx::new(bot, key, pr, forge))
    }

    /// A reply on the pull request, counted against its reply limit.
    pub async fn reply(&self, body: &str) -> anyhow::Result<()> {
        publish::reply(&self.bot, &self.forge, &self.key, body).await
    }

    /// Starts or updates the `cascade` check of the stored head (the run's id is kept in
    /// `record`, saved by the caller).
    pub async fn set_check(
        &self,
        record: &mut PullRequestRecord,
        output: &CheckOutput,
    ) -> anyhow::Result<()> {
        publish::check(&self.forge, &self.key, record, &self.pr.head_ref, output).await
    }

    /// Posts or edits the plan comment (its ids kept in `record`, saved by the caller).
    pub async fn upsert_comment(
        &self,
        record: &mut PullRequestRecord,
        parts: &[String],
    ) -> anyhow::Result<()> {
        publish::upsert_comment(&self.bot, &self.forge, &self.key, record, parts).await
    }

    /// Persists the pull request's row as it is.
    pub async fn save(&self, record: &PullRequestRecord) -> anyhow::Result<()> {
        self.bot.store.save_pull_request(record).await
    }

    /// Moves the pull request to `state` and persists its row.
    pub async fn transition(
        &self,
        record: &mut PullRequestRecord,
        state: PrState,
    ) -> anyhow::Result<()> {
        record.state = state;
        self.save(record).await
    }
}
