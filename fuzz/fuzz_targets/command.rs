//! `cargo +nightly fuzz run command`: see `cascade_fuzz::command` for what it feeds and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cascade_fuzz::command(data));
