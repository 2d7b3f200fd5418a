//! Every bound the policy engine puts on a policy set and its evaluation, in one place.
//!
//! Owns: the numbers (files, bytes, evaluation time, range sizes) and nothing else.
//! The numbers are far above what real policy sets need (conftest's own examples are a
//! few files of a few KiB, evaluated in milliseconds) and far below what would hurt the
//! server. Must never: depend on anything in the repository; these are constants so
//! that a pull request, or a policy, cannot move them.
//!
//! Memory: regorus's own limit (`allocator-memory-limits`) needs regorus's mimalloc fork
//! as the process's global allocator (it conflicts with the mimalloc cascade links) and
//! counts the whole process, not one evaluation. So the server and the CLI evaluate each
//! set in a child process under `RLIMIT_DATA` ([`EVALUATION_MEMORY`], see
//! `exec::policy_worker`). In process (the library's own tests), memory is bounded by the
//! time limit (checked before every expression and builtin call), by
//! [`MAX_RANGE_ELEMENTS`] (the one builtin that allocates in proportion to a number it is
//! given) and by running one evaluation at a time ([`CONCURRENT_EVALUATIONS`]). Measured:
//! a policy written to allocate as fast as it can reaches about 1.3 GiB in process before
//! the 2 s limit stops it, and about 0.5 GiB in a child, where its ceiling stops it.

use std::time::Duration;

/// The largest `.rego` file a policy set may hold.
pub const MAX_POLICY_FILE_BYTES: u64 = 256 << 10;

/// The most `.rego` files (tests included) one policy set may hold.
pub const MAX_POLICY_FILES: usize = 256;

/// The most bytes one policy set's `.rego` files may hold together.
pub const MAX_POLICY_SET_BYTES: u64 = 4 << 20;

/// How deep the directories of a policy set may nest below its own.
pub const MAX_POLICY_DIR_DEPTH: usize = 16;

/// How many evaluations run at once in the process. Memory is bounded by time, so the
/// worst an evaluation can allocate is not multiplied by the units planning together;
/// evaluations take milliseconds, so the units hardly wait.
pub const CONCURRENT_EVALUATIONS: usize = 1;

/// The data one evaluation's process may hold before it is stopped, beyond
/// [`EVALUATION_MEMORY_PER_INPUT_BYTE`] for each byte of its input: the binary, the
/// compiled set and the parsed input take about a tenth of it.
pub const EVALUATION_MEMORY: u64 = 512 << 20;

/// The more data an evaluation may hold for each byte of its input (as JSON): the input
/// is held parsed twice (serde's value and regorus's), several times its text.
pub const EVALUATION_MEMORY_PER_INPUT_BYTE: u64 = 16;

/// How long one unit's evaluation of one policy set may take, all its rules together.
pub const EVALUATION_TIME: Duration = Duration::from_secs(2);

/// How long one `test_*` rule may take in `cascade policy test`.
pub const TEST_TIME: Duration = EVALUATION_TIME;

/// How many pieces of work regorus does between two looks at the clock: each look
/// costs a clock read, and each piece is one expression or builtin call.
pub const TIME_CHECK_INTERVAL: u32 = 32;

/// The most numbers `numbers.range` and `numbers.range_step` may produce: regorus
/// allocates the whole array in one call, before it looks at the clock again.
pub const MAX_RANGE_ELEMENTS: u64 = 1_000_000;
