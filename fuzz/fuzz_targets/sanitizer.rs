#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| hood_fuzz::sanitizer(data));
