//! Every bound discovery puts on a pull request's configuration, in one place.
//!
//! Owns: the numbers (file sizes, value sizes, evaluation steps, nesting
//! depths, the walk's reach, the stack discovery runs on) and the [`Limit`]
//! each one reports when a configuration runs into it. The numbers are far
//! above what real configurations need and far below what would hurt the
//! server: a unit that crosses one is *unresolved* (planned on every change)
//! with a message that names the limit, never a crash, a hang or a guess.
//! Must never: depend on anything in the repository; these are constants so
//! that a pull request cannot move them.

/// The largest HCL file discovery parses (`terragrunt.hcl`, included and read
/// configurations, values files, var files, the `.tf` files of local modules).
pub const MAX_CONFIG_FILE_BYTES: u64 = 4 << 20;

/// How many repeated object keys one file may have: each is renamed and the
/// file parsed again (Go HCL keeps the last of repeated keys; hcl-edit refuses them).
pub const MAX_DUPLICATE_KEYS: usize = 256;

/// How many bytes re-parsing one file for repeated keys may parse in total.
pub const MAX_REPARSED_BYTES: usize = 32 << 20;

/// The largest string one value may hold, and so the largest file `file()`
/// reads. Templates, `format`, `join`, `replace` and friends stop at it
/// before allocating more.
pub const MAX_STRING_BYTES: usize = 1 << 20;

/// The most elements one list or object may hold (literals, `for`
/// expressions, function results, decoded JSON and YAML).
pub const MAX_COLLECTION_LEN: usize = 100_000;

/// Evaluation steps one unit may take, counting every expression evaluated,
/// every value node copied and every 64 bytes of string copied, across the
/// unit's own file, its includes and the files it reads with
/// `read_terragrunt_config`. The largest unit of the fixtures takes a few
/// hundred; this bounds both the time (tens of milliseconds) and the memory
/// (tens of MiB) one unit can cost.
pub const MAX_STEPS_PER_UNIT: u64 = 1_000_000;

/// Bytes of string one evaluation step pays for when a value is copied.
pub const STRING_BYTES_PER_STEP: usize = 64;

/// How deeply evaluation may nest: expressions inside expressions, a local
/// that uses a local, a file read with `read_terragrunt_config` that reads
/// another. One parsed expression nests at most 64 levels plus 128 binary
/// operators (hcl-edit's own limits), so this leaves room for chains of
/// locals a few hundred long; a chain of thousands is refused.
pub const MAX_EVAL_DEPTH: u32 = 512;

/// How deeply a value kept in a local may nest (lists in lists, objects in
/// objects). Values are copied, compared and dropped recursively; this keeps
/// every such walk shallow. Decoded JSON nests at most 128 levels.
pub const MAX_VALUE_DEPTH: usize = 256;

/// How many `read_terragrunt_config` calls may be open inside each other.
pub const MAX_READ_DEPTH: usize = 16;

/// How many stacks a stack may generate inside each other (a `stack` block
/// whose source holds a `stack` block…): a stack that generates itself stops here.
pub const MAX_STACK_DEPTH: usize = 16;

/// The most one remote source's fetch may download (git's pack, one file): a
/// catalog of units is kilobytes; a pull request naming a huge repository stops here.
pub const MAX_SOURCE_FETCH_BYTES: u64 = 256 << 20;

/// The most files and directories one fetched source's tree may hold.
pub const MAX_SOURCE_FILES: usize = 20_000;

/// The most bytes one fetched source's tree may hold, its files together.
pub const MAX_SOURCE_TREE_BYTES: u64 = 512 << 20;

/// How long resolving a ref or fetching one remote source may take.
pub const SOURCE_FETCH_SECONDS: u64 = 120;

/// The widest field `format` pads to (`%10s`).
pub const MAX_FORMAT_WIDTH: usize = MAX_STRING_BYTES;

/// The most digits `format` prints after the decimal point (`%.2f`).
pub const MAX_FORMAT_PRECISION: usize = 100;

/// How many parser events, nodes and replayed alias events one `yamldecode`
/// may produce: a YAML alias bomb stops here instead of expanding.
pub const MAX_YAML_NODES: usize = MAX_COLLECTION_LEN;

/// How deeply a document given to `yamldecode` may nest.
pub const MAX_YAML_DEPTH: usize = 64;

/// How many files and directories the walk of the repository lists before it
/// stops (with a problem saying so).
pub const MAX_WALK_ENTRIES: usize = 1_000_000;

/// How many directories deep the walk goes below the repository root.
pub const MAX_WALK_DEPTH: usize = 64;

/// How many symbolic links to directories one walk follows in total: links
/// inside the repository are followed as Terragrunt follows them, and this
/// keeps a tree of links to links from multiplying the walk.
pub const MAX_LINKED_DIRS: usize = 1_000;

/// The longest computed path a message shows; longer ones are described.
pub const MAX_SHOWN_PATH_CHARS: usize = 200;

/// The most problems one unit reports; the rest are counted in one more.
pub const MAX_PROBLEMS_PER_UNIT: usize = 50;

/// The longest message a problem carries; longer ones are cut.
pub const MAX_MESSAGE_CHARS: usize = 2_000;

/// The stack of each discovery thread. Evaluation and the HCL parser recurse;
/// the depth limits above keep the deepest configuration they accept well
/// inside a quarter of this (a test evaluates the deepest allowed nesting of
/// every kind on a thread with a quarter of it).
pub const DISCOVERY_STACK_BYTES: usize = 64 << 20;

/// Evaluation checks the deadline once per this many steps: often enough to
/// stop within a millisecond, rarely enough to cost nothing.
pub const DEADLINE_CHECK_STEPS: u64 = 1024;

/// How a message that already says what to do ends: discovery adds no advice of its own after it.
pub const PLANNED_ON_EVERY_CHANGE: &str = "(until then the unit is planned on every change)";

/// What a problem says about what is planned: a message holding it says
/// what happens and gave its own advice, so discovery adds none (the text
/// says it once).
pub const PLANNED: &str = " planned";

/// A limit a unit's configuration ran into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// [`MAX_STEPS_PER_UNIT`].
    Steps,
    /// [`MAX_EVAL_DEPTH`].
    Depth,
    /// [`MAX_VALUE_DEPTH`].
    ValueDepth,
    /// [`MAX_READ_DEPTH`].
    ReadDepth,
    /// [`MAX_STRING_BYTES`].
    StringBytes,
    /// [`MAX_COLLECTION_LEN`].
    CollectionLen,
    /// [`MAX_FORMAT_WIDTH`].
    FormatWidth,
    /// [`MAX_FORMAT_PRECISION`].
    FormatPrecision,
    /// [`MAX_YAML_NODES`] or [`MAX_YAML_DEPTH`].
    Yaml,
    /// The discovery deadline passed.
    Deadline,
}

impl Limit {
    /// What went over, and what to do about it.
    pub fn message(self) -> String {
        let what = match self {
            Limit::Steps => format!(
                "evaluating this unit exceeds cascade's limit of {MAX_STEPS_PER_UNIT} evaluation steps"
            ),
            Limit::Depth => format!(
                "evaluation nests deeper than cascade's limit of {MAX_EVAL_DEPTH} levels (expressions, locals that use locals, files read by read_terragrunt_config)"
            ),
            Limit::ValueDepth => {
                format!("a value nests deeper than cascade's limit of {MAX_VALUE_DEPTH} levels")
            }
            Limit::ReadDepth => format!(
                "read_terragrunt_config calls nest deeper than cascade's limit of {MAX_READ_DEPTH}"
            ),
            Limit::StringBytes => format!(
                "a string exceeds cascade's limit of {} MiB",
                MAX_STRING_BYTES >> 20
            ),
            Limit::CollectionLen => {
                format!("a list or object exceeds cascade's limit of {MAX_COLLECTION_LEN} elements")
            }
            Limit::FormatWidth => {
                format!("a format width exceeds cascade's limit of {MAX_FORMAT_WIDTH}")
            }
            Limit::FormatPrecision => {
                format!("a format precision exceeds cascade's limit of {MAX_FORMAT_PRECISION}")
            }
            Limit::Yaml => format!(
                "the YAML given to yamldecode exceeds cascade's limit of {MAX_YAML_NODES} nodes (aliases included) or {MAX_YAML_DEPTH} levels"
            ),
            Limit::Deadline => {
                return format!(
                    "discovery exceeded its time limit before this unit was fully evaluated; simplify the configuration, or raise the server's --discovery-timeout {PLANNED_ON_EVERY_CHANGE}"
                );
            }
        };
        format!("{what}; simplify the configuration {PLANNED_ON_EVERY_CHANGE}")
    }
}
