//! chatd's bundled `provider_c` provider: chat completions API (xAI by default). (Being written.)

use chatd_plugin_sdk::provider::Provider;

struct Plugin;

impl Provider for Plugin {}

chatd_plugin_sdk::export_provider!(Plugin);
