//! chatd's bundled `provider_b` provider: Messages API (Anthropic). (Being written.)

use chatd_plugin_sdk::provider::Provider;

struct Plugin;

impl Provider for Plugin {}

chatd_plugin_sdk::export_provider!(Plugin);
