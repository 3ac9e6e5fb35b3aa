#![no_main]
// See redodb_fuzz::sql for the input's layout and what is checked.
libfuzzer_sys::fuzz_target!(|data: &[u8]| redodb_fuzz::sql::run(data));
