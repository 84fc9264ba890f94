//! chatd's bundled `provider_agent` provider: an OpenAI-compatible agent server (chat completions, no tools added). (Being written.)

use chatd_plugin_sdk::provider::Provider;

struct Plugin;

impl Provider for Plugin {}

chatd_plugin_sdk::export_provider!(Plugin);
