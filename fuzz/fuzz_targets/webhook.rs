//! `cargo +nightly fuzz run webhook`: see `cascade_fuzz::webhook` for what it feeds and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cascade_fuzz::webhook(data));
