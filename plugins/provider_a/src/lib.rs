//! chatd's bundled `provider_a` provider: Responses API (OpenAI). (Being written.)

use chatd_plugin_sdk::provider::Provider;

struct Plugin;

impl Provider for Plugin {}

chatd_plugin_sdk::export_provider!(Plugin);
