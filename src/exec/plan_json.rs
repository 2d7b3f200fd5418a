//! The plan JSON `show -json` writes, which a pull request's code sizes: read
//! in chunks, never past a cap, and counted against one memory budget shared
//! by every unit of the process, for as long as cascade holds it or anything
//! parsed from it. A unit over either limit fails alone; the others wait for
//! budget rather than grow the server.

use super::ExecError;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// The default of `--max-plan-json`, in MiB.
pub const DEFAULT_MAX_PLAN_JSON_MIB: u64 = 64;
/// The default of `--plan-memory`, in MiB.
pub const DEFAULT_PLAN_MEMORY_MIB: u64 = 1024;

const MIB: u64 = 1 << 20;

/// What one JSON byte may cost once parsed: the bytes themselves while they
/// are parsed, the strings of the parsed document, and the fingerprint's copy
/// of the changes with their canonical form.
const BYTE_COST: u64 = 3;
/// What one JSON value may cost beyond its bytes, twice over (the document and
/// the fingerprint's copy): a `serde_json::Value` (32 bytes), the allocation
/// behind a string or an object entry, and a vector's spare room. Dense
/// documents (`[0,0,0,…]`, two bytes a value) are where parsing costs most.
const VALUE_COST: u64 = 160;

/// How large one unit's plan JSON may be, and how much memory every plan being
/// read or parsed at once may take together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanLimits {
    pub max_json_mib: u64,
    pub memory_mib: u64,
}

impl Default for PlanLimits {
    fn default() -> PlanLimits {
        PlanLimits {
            max_json_mib: DEFAULT_MAX_PLAN_JSON_MIB,
            memory_mib: DEFAULT_PLAN_MEMORY_MIB,
        }
    }
}

impl PlanLimits {
    /// Refuses limits under which a plan of the largest allowed size could
    /// never be read: the budget must hold what its bytes alone cost.
    pub fn check(&self) -> Result<(), String> {
        if self.max_json_mib == 0 {
            return Err("--max-plan-json must be at least 1 (MiB)".into());
        }
        let least = self.max_json_mib.saturating_mul(BYTE_COST);
        if self.memory_mib < least {
            return Err(format!(
                "--plan-memory {} is too small for --max-plan-json {}: reading and parsing a plan \
                 takes about {BYTE_COST} times its size, so give --plan-memory {least} or more, \
                 or lower --max-plan-json",
                self.memory_mib, self.max_json_mib
            ));
        }
        Ok(())
    }
}

/// The memory every plan of the process draws from, in MiB.
#[derive(Clone, Debug)]
pub(super) struct PlanBudget {
    permits: Arc<Semaphore>,
    total_mib: u64,
}

impl PlanBudget {
    pub fn new(total_mib: u64) -> PlanBudget {
        let total_mib = total_mib.clamp(1, Semaphore::MAX_PERMITS as u64);
        PlanBudget {
            permits: Arc::new(Semaphore::new(total_mib as usize)),
            total_mib,
        }
    }
}

/// A share of the budget, grown as a plan's JSON arrives, given back when dropped.
#[derive(Debug)]
struct Share {
    budget: PlanBudget,
    permit: Option<OwnedSemaphorePermit>,
    mib: u64,
}

impl Share {
    fn new(budget: &PlanBudget) -> Share {
        Share {
            budget: budget.clone(),
            permit: None,
            mib: 0,
        }
    }

    /// Holds at least `bytes` of the budget. A share that cannot grow at once
    /// gives back what it holds and waits for the whole amount, so waiting
    /// shares hold nothing and two of them never wait on each other.
    async fn grow_to(&mut self, bytes: u64) -> Result<(), u64> {
        let need = bytes.div_ceil(MIB).max(1);
        if need <= self.mib {
            return Ok(());
        }
        let total = self.budget.total_mib;
        if need > total {
            return Err(need);
        }
        // Doubling keeps the number of steps small for a large plan.
        let want = need.max(self.mib * 2).min(total);
        let more = (want - self.mib) as u32;
        match self.budget.permits.clone().try_acquire_many_owned(more) {
            Ok(permit) => match &mut self.permit {
                Some(held) => held.merge(permit),
                None => self.permit = Some(permit),
            },
            Err(_) => {
                self.permit = None;
                let permit = self
                    .budget
                    .permits
                    .clone()
                    .acquire_many_owned(want as u32)
                    .await
                    .map_err(|_| need)?;
                self.permit = Some(permit);
            }
        }
        self.mib = want;
        Ok(())
    }

    /// Gives back what doubling took beyond `bytes`.
    fn shrink_to(&mut self, bytes: u64) {
        let keep = bytes.div_ceil(MIB).max(1);
        if let Some(permit) = &mut self.permit
            && self.mib > keep
        {
            drop(permit.split((self.mib - keep) as usize));
            self.mib = keep;
        }
    }
}

/// One unit's plan JSON and its share of the budget. Drop it once what was
/// parsed from it is dropped too: the share is given back then.
#[derive(Debug)]
pub struct PlanJson {
    bytes: Vec<u8>,
    _share: Option<Share>,
}

impl PlanJson {
    /// The bytes, leaving the share held: parse them, drop them, and keep
    /// this until what the parse made is gone.
    pub fn take_bytes(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.bytes)
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// JSON held outside any budget: an executor's fixed answer, a test's script.
impl From<Vec<u8>> for PlanJson {
    fn from(bytes: Vec<u8>) -> PlanJson {
        PlanJson {
            bytes,
            _share: None,
        }
    }
}

/// Counts the values of a JSON text as it streams by (structural characters
/// outside strings), enough to bound what parsing it will allocate without
/// parsing it. A JSON tokenizer crate would parse; this only counts.
#[derive(Default)]
struct ValueCount {
    values: u64,
    in_string: bool,
    escaped: bool,
}

impl ValueCount {
    fn feed(&mut self, chunk: &[u8]) {
        for &b in chunk {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b',' | b':' | b'[' | b'{' => self.values += 1,
                _ => {}
            }
        }
    }
}

/// What holding and parsing `bytes` of JSON with `values` values may cost.
fn cost(bytes: u64, values: u64) -> u64 {
    bytes
        .saturating_mul(BYTE_COST)
        .saturating_add(values.saturating_mul(VALUE_COST))
}

/// Reads `stream` (a `show -json`'s standard output) to its end in chunks,
/// drawing on `budget` as it grows. Past `max_bytes`, or past what the budget
/// could ever hold, it stops reading and cancels `stop` (the command is then
/// stopped, not left blocked on a full pipe).
pub(super) async fn read(
    stream: impl AsyncRead + Unpin,
    max_bytes: u64,
    budget: &PlanBudget,
    stop: &CancellationToken,
) -> Result<PlanJson, ExecError> {
    let mut stream = stream;
    // Reserved whole and touched only as it fills: growing by doubling would
    // copy, and hold the old buffer beside the new one at the end.
    let mut bytes = Vec::with_capacity(max_bytes.min(usize::MAX as u64) as usize);
    let mut share = Share::new(budget);
    let mut count = ValueCount::default();
    let mut chunk = vec![0u8; 256 << 10];
    let refuse = |e: ExecError| {
        stop.cancel();
        Err(e)
    };
    loop {
        let n = match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let size = (bytes.len() + n) as u64;
        if size > max_bytes {
            return refuse(ExecError::PlanTooLarge {
                limit_mib: max_bytes / MIB,
            });
        }
        count.feed(&chunk[..n]);
        if let Err(need_mib) = share.grow_to(cost(size, count.values)).await {
            return refuse(ExecError::PlanOverBudget {
                need_mib,
                budget_mib: budget.total_mib,
            });
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    share.shrink_to(cost(bytes.len() as u64, count.values));
    bytes.shrink_to_fit();
    Ok(PlanJson {
        bytes,
        _share: Some(share),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_inside_strings_are_not_counted() {
        let mut count = ValueCount::default();
        count.feed(br#"{"a":[1,2,{"b":"x,\",:[{"}]}"#);
        // { : [ , , { :  — the commas, colons and brackets in the string are skipped.
        assert_eq!(count.values, 7);
        let mut split = ValueCount::default();
        split.feed(br#"{"a":"x\"#);
        split.feed(br#"",":[1]}"#);
        assert_eq!(
            split.values, 4,
            "the escaped quote keeps the string open across chunks"
        );
    }

    #[tokio::test]
    async fn a_plan_past_the_cap_is_refused_and_its_command_stopped() {
        let budget = PlanBudget::new(64);
        let stop = CancellationToken::new();
        let json = vec![b' '; 3 << 20];
        let err = read(&json[..], 2 << 20, &budget, &stop).await.unwrap_err();
        assert!(matches!(err, ExecError::PlanTooLarge { limit_mib: 2 }));
        assert!(stop.is_cancelled());
        assert_eq!(
            budget.permits.available_permits(),
            64,
            "the share is given back"
        );
    }

    #[tokio::test]
    async fn a_dense_plan_is_refused_by_what_parsing_it_would_cost() {
        let budget = PlanBudget::new(16);
        let stop = CancellationToken::new();
        // 2 MiB of `0,`: about a million values, far more than 16 MiB once parsed.
        let mut json = b"[".to_vec();
        json.extend(std::iter::repeat_n(*b"0,", 1 << 20).flatten());
        json.extend(b"0]");
        let err = read(&json[..], 64 << 20, &budget, &stop).await.unwrap_err();
        assert!(
            matches!(err, ExecError::PlanOverBudget { budget_mib: 16, .. }),
            "{err}"
        );
        assert!(stop.is_cancelled());
    }

    #[tokio::test]
    async fn the_share_is_held_until_the_json_is_dropped() {
        let budget = PlanBudget::new(64);
        let stop = CancellationToken::new();
        let json = vec![b' '; 5 << 20];
        let mut plan = read(&json[..], 64 << 20, &budget, &stop).await.unwrap();
        assert!(!stop.is_cancelled());
        let held = 64 - budget.permits.available_permits();
        assert!(
            held >= 15,
            "5 MiB of JSON holds at least 15 MiB, held {held}"
        );
        assert_eq!(plan.take_bytes().len(), 5 << 20);
        assert_eq!(64 - budget.permits.available_permits(), held);
        drop(plan);
        assert_eq!(budget.permits.available_permits(), 64);
    }

    #[tokio::test]
    async fn a_plan_waits_for_budget_another_holds() {
        let budget = PlanBudget::new(32);
        let stop = CancellationToken::new();
        let big = vec![b' '; 8 << 20];
        let first = read(&big[..], 64 << 20, &budget, &stop).await.unwrap();
        let second = read(&big[..], 64 << 20, &budget, &stop);
        tokio::pin!(second);
        let waited = tokio::time::timeout(std::time::Duration::from_millis(100), &mut second).await;
        assert!(
            waited.is_err(),
            "the second waits while the first holds the budget"
        );
        drop(first);
        let second = second.await.unwrap();
        assert_eq!(second.bytes().len(), 8 << 20);
    }

    #[test]
    fn limits_refuse_a_budget_no_plan_fits() {
        assert!(PlanLimits::default().check().is_ok());
        let err = PlanLimits {
            max_json_mib: 512,
            memory_mib: 1024,
        }
        .check()
        .unwrap_err();
        assert!(err.contains("--plan-memory 1536"), "{err}");
    }
}
