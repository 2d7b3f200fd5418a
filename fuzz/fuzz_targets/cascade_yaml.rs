//! `cargo +nightly fuzz run cascade_yaml`: see `cascade_fuzz::cascade_yaml` for what it feeds and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cascade_fuzz::cascade_yaml(data));
