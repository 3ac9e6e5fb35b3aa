#![no_main]
// See redodb_fuzz::control for the input's layout and what is checked.
libfuzzer_sys::fuzz_target!(|data: &[u8]| redodb_fuzz::control::run(data));
