//! `cargo +nightly fuzz run hcl_discover`: see `cascade_fuzz::hcl_discover` for what it feeds and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cascade_fuzz::hcl_discover(data));
