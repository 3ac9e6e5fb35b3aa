#![no_main]
// See redodb_fuzz::wire for the input's layout and what is checked.
libfuzzer_sys::fuzz_target!(|data: &[u8]| redodb_fuzz::wire::run_session(data));
