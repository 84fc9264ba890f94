//! The plugins built with chatd (`/plugins`) and the Python interpreter, embedded by `build.rs`.
//! Only data: chatd's lib reads them through `plugins::loading::embedded`.

include!(concat!(env!("OUT_DIR"), "/bundled.rs"));
