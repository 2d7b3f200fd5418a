//! Loading, compiling and evaluating a policy set with regorus (see the parent module).
