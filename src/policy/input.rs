//! The input document a policy sees (see the parent module).
