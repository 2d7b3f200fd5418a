//! Policy checks in process: Rego (conftest semantics) over one input document per unit,
//! evaluated by the embedded `regorus` engine, never a binary or a file on disk.
//!
//! `engine` owns loading a policy set's `.rego` files from a tree (the default branch's),
//! compiling them with the impure builtins disabled, bounded evaluation, and `deny` /
//! `violation` / `warn` results; `input` owns the document a policy sees (the plan with
//! sensitive values replaced, the unit's place in the graph, the change, the pull request)
//! and its JSON schema. Never decides what a result blocks: the engine and the bot do.

pub mod engine;
pub mod input;
