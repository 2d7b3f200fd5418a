//! `cargo +nightly fuzz run inert_markdown`: see `cascade_fuzz::inert_markdown` for what it
//! feeds and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cascade_fuzz::inert_markdown(data));
