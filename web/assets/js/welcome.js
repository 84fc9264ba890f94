// The first page of a server with no model provider: what to set, instead of an empty pane.
// The names are the server's own settings (docs/configuration.md); nothing here is fetched.

import { h } from './dom.js';

const EXAMPLE = `[providers.ollama]
adapter = "chat_completions"
base_url = "http://127.0.0.1:11434/v1"
models = ["llama3.2"]`;

export function noProvider() {
  return h(
    'div.empty.welcome',
    { id: 'no-provider' },
    h('h2', {}, 'No model provider is available yet'),
    h(
      'p',
      {},
      'Set an API key for one of the built-in providers in the server\u2019s environment and restart it, or wait until a provider\u2019s model list loads (its error, if any, shows above):',
    ),
    h(
      'ul',
      {},
      h('li', {}, h('code', {}, 'PROVIDER_A_API_KEY'), ' \u2014 an OpenAI Responses API key (provider_a)'),
      h('li', {}, h('code', {}, 'PROVIDER_B_API_KEY'), ' \u2014 an Anthropic Messages API key (provider_b)'),
      h('li', {}, h('code', {}, 'PROVIDER_C_API_KEY'), ' \u2014 an xAI API key (provider_c)'),
    ),
    h('p', {}, 'Or declare any OpenAI-compatible, Responses or Messages endpoint in the configuration file (', h('code', {}, '--config chatd.toml'), '), applied without a restart:'),
    h('pre', {}, h('code', {}, EXAMPLE)),
    h('p', {}, 'docs/configuration.md and docs/plugins.md (\u201cAdding a provider\u201d) describe every setting.'),
  );
}
