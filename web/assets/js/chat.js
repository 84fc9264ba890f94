// The chat view: the stored transcript, the provider and model pickers, the chat's settings,
// the composer with attachments, and the live run. A run is read by the contract's client
// rules: deltas rendered as they arrive, tool calls upserted by `toolCallId`, on `done` the
// chat reloaded as canonical (and its usage shown), on `error` the input kept with a retry. A
// chat opened while its run goes on (a reload, a second tab) attaches to it from
// `GET /v1/active-runs`: the replay rebuilds the whole answer. While a reply runs, Stop asks the
// server to end it (`POST …/stream/cancel`): the run ends with `done` and the text so far, which
// stays on the page as the stored reply. Each stored message has its actions (`actions.js`):
// copy, and edit or regenerate as a fork into a new chat whose reply runs once it opens.

import * as api from './api.js';
import { actionBar, addCodeCopy, chatCommand, editMessage, forkChat, historyRows } from './actions.js';
import { imageSource, payloadBytes, readFiles } from './attachments.js';
import { announce, clear, copyText, formatBytes, h, toast, typingDots } from './dom.js';
import { renderMarkdown } from './markdown.js';
import { follow } from './sse.js';
import { ToolCards, toolCard } from './toolcards.js';
import { noProvider } from './welcome.js';

const NEW_CHAT_TITLE = 'New chat';

export function mountChat(container, app, chatId) {
  const view = new ChatView(container, app, chatId);
  view.start();
  return view;
}

class ChatView {
  constructor(container, app, chatId) {
    this.container = container;
    this.app = app;
    this.chatId = chatId;
    this.chat = null;
    this.running = false;
    this.pending = [];
    this.lastUsage = null;
    this.failed = null; // a failed run's request and the draft it came from, for retry
    this.runSeq = 0; // counts the runs this view read, so a stop belongs to one
    this.stoppable = false; // the current run's `meta` came
    this.stopping = null; // the run a stop was asked for, while it is asked
    this.abort = new AbortController();
    this.build();
  }

  unmount() {
    this.abort.abort();
  }

  build() {
    this.providerSelect = h('select', { id: 'provider', 'aria-label': 'Provider', onchange: () => this.fillModels() });
    this.modelSelect = h('select', { id: 'model', 'aria-label': 'Model' });
    this.modelNote = h('p.model-note', { id: 'model-note' });
    this.promptInput = h('textarea', {
      id: 'system-prompt',
      rows: 3,
      placeholder: 'Instructions added to every request of this chat',
    });
    this.toolList = h('fieldset.tools', {}, h('legend', {}, 'Tools the model may use'));
    this.settingsStatus = h('span.settings-status', { role: 'status' });
    this.settings = h(
      'details.chat-settings',
      {},
      h('summary', {}, 'Chat settings'),
      h('label', { for: 'system-prompt' }, 'System prompt'),
      this.promptInput,
      this.toolList,
      h(
        'div.row',
        {},
        h('button', { type: 'button', id: 'save-settings', onclick: () => this.saveSettings() }, 'Save settings'),
        this.settingsStatus,
      ),
    );
    this.transcript = h('div.transcript', { id: 'transcript', 'aria-live': 'off' });
    this.errorBox = h('div.run-error', { id: 'run-error', role: 'alert', hidden: true });
    this.input = h('textarea', {
      id: 'message',
      rows: 1,
      placeholder: 'Message',
      'aria-label': 'Message',
      onkeydown: (e) => this.onKey(e),
      oninput: () => this.autosize(),
      // An image (a screenshot) pasted into the message is attached, as a dropped file is.
      // Text wins: an office program puts a picture of the cells beside their text.
      onpaste: (e) => {
        const files = [...(e.clipboardData?.files || [])];
        if (!files.length || e.clipboardData.types.includes('text/plain')) return;
        e.preventDefault();
        this.addFiles(files);
      },
    });
    this.fileInput = h('input', {
      type: 'file',
      id: 'files',
      multiple: true,
      hidden: true,
      onchange: () => this.addFiles(this.fileInput.files),
    });
    this.chips = h('ul.chips', { id: 'attachments', 'aria-label': 'Attachments' });
    this.sendButton = h('button.primary.send', { type: 'submit', id: 'send' }, 'Send');
    this.stopButton = h(
      'button.send.stop',
      { type: 'button', id: 'stop', hidden: true, title: 'Stop the reply (it keeps what was written)', onclick: () => this.stop() },
      'Stop',
    );
    const attachButton = h(
      'button.attach',
      { type: 'button', id: 'attach', 'aria-label': 'Attach files', title: 'Attach images (PNG, JPEG) or text files', onclick: () => this.fileInput.click() },
      '+',
    );
    this.composer = h(
      'form.composer',
      { id: 'composer', onsubmit: (e) => { e.preventDefault(); this.send(); } },
      this.chips,
      h('div.composer-row', {}, attachButton, this.input, this.sendButton, this.stopButton),
      this.fileInput,
      h('p.hint', {}, 'Enter sends · Shift+Enter for a new line · Ctrl+/ for shortcuts'),
    );
    this.composer.addEventListener('dragover', (e) => e.preventDefault());
    this.composer.addEventListener('drop', (e) => {
      e.preventDefault();
      if (e.dataTransfer?.files?.length) this.addFiles(e.dataTransfer.files);
    });
    clear(this.container, 
      h(
        'section.chat',
        { 'aria-label': 'Chat' },
        h('div.chat-bar', {}, this.providerSelect, this.modelSelect),
        this.modelNote,
        this.settings,
        this.transcript,
        h('div.composer-wrap', {}, this.errorBox, this.composer),
      ),
    );
  }

  async start() {
    const signal = this.abort.signal;
    try {
      const [chat, models, tools] = await Promise.all([
        this.chatId ? api.get(`v1/chats/${encodeURIComponent(this.chatId)}`, { signal }).then((r) => r.chat) : null,
        this.app.models(),
        this.app.tools(),
      ]);
      if (signal.aborted) return;
      this.chat = chat;
      this.renderSettings(tools);
      this.renderPickers(models);
      this.renderTranscript();
      this.app.setTitle(chat ? chat.title || NEW_CHAT_TITLE : NEW_CHAT_TITLE);
      if (chat && this.app.takeFork(chat.id)) {
        // A fork just made: its last message is asked now.
        this.runStored();
      } else if (chat) {
        const runs = await api.get('v1/active-runs', { signal });
        if (runs.chats.includes(chat.id)) this.attach();
      }
      this.input.focus();
    } catch (err) {
      if (err.name === 'AbortError') return;
      if (err instanceof api.ApiError && err.status === 404) {
        clear(this.container, 
          h('div.empty', {}, h('p', {}, 'This chat does not exist (it may have been deleted).'), h('a.button', { href: '#/' }, 'Start a new chat')),
        );
        this.app.setTitle('Not found');
        return;
      }
      this.showError(err.message);
    }
  }

  // ---- pickers and settings -------------------------------------------------------------

  renderPickers(models) {
    this.providers = models.providers || {};
    const notes = [];
    clear(this.providerSelect);
    for (const [id, entry] of Object.entries(this.providers)) {
      const usable = (entry.models || []).length > 0;
      // A declared provider's label from the configuration file, else its id.
      const name = entry.displayName || id;
      const label = usable ? name : `${name} (unavailable)`;
      this.providerSelect.append(h('option', { value: id, disabled: !usable }, label));
      if (entry.error) notes.push(`${name}: ${entry.error}${usable ? ' (showing the last list)' : ''}`);
    }
    this.modelNote.textContent = notes.join(' · ');
    this.modelNote.hidden = notes.length === 0;
    const usable = Object.entries(this.providers).find(([, e]) => (e.models || []).length);
    if (!usable) this.providerSelect.prepend(h('option', { value: '', selected: true }, 'No provider available'));
    this.noProvider = !usable;
    // The chat's last model; for a new chat the one used last anywhere, while its provider
    // still lists it; else the first provider with models.
    const recent = this.chat ? null : this.app.recentModel();
    const last = this.chat
      ? { provider: this.chat.lastUsedProvider, model: this.chat.lastUsedModel }
      : recent && (this.providers[recent.provider]?.models || []).includes(recent.model)
        ? recent
        : {};
    const provider = last.provider && this.providers[last.provider] ? last.provider : usable?.[0];
    if (provider) this.providerSelect.value = provider;
    this.fillModels(last.provider === provider ? last.model : null);
  }

  fillModels(preferred) {
    const entry = this.providers[this.providerSelect.value];
    const models = [...(entry?.models || [])];
    if (preferred && !models.includes(preferred) && !(entry?.featuredModels || []).includes(preferred)) {
      models.unshift(preferred);
    }
    // The configuration file's featured models first, then every other one.
    const featured = entry?.featuredModels || [];
    const option = (m) => h('option', { value: m }, m);
    clear(
      this.modelSelect,
      featured.length
        ? [
            h('optgroup', { label: 'Featured' }, featured.map(option)),
            h('optgroup', { label: 'All models' }, models.filter((m) => !featured.includes(m)).map(option)),
          ]
        : models.map(option),
    );
    if (preferred) this.modelSelect.value = preferred;
    this.updateSendable();
  }

  renderSettings(tools) {
    const enabled = this.chat ? new Set(this.chat.enabledTools || []) : null;
    this.promptInput.value = this.chat?.additionalSystemPrompt || '';
    for (const tool of tools) {
      const id = `tool-${tool.name}`;
      this.toolList.append(
        h(
          'label.tool-option',
          { for: id, title: tool.description },
          h('input', { type: 'checkbox', id, value: tool.name, checked: enabled ? enabled.has(tool.name) : true }),
          tool.name,
        ),
      );
    }
    if (!tools.length) this.toolList.append(h('p', {}, 'No tools are available on this server.'));
  }

  settingsBody() {
    const enabledTools = [...this.toolList.querySelectorAll('input:checked')].map((i) => i.value);
    const prompt = this.promptInput.value.trim();
    return { additionalSystemPrompt: prompt || null, enabledTools };
  }

  async saveSettings() {
    if (!this.chat) {
      this.settingsStatus.textContent = 'Used when the chat starts.';
      return;
    }
    try {
      const { chat } = await api.patch(`v1/chats/${encodeURIComponent(this.chat.id)}`, this.settingsBody());
      this.chat = { ...this.chat, ...chat };
      this.settingsStatus.textContent = 'Saved.';
    } catch (err) {
      this.settingsStatus.textContent = `Not saved: ${err.message}`;
    }
  }

  // ---- transcript -----------------------------------------------------------------------

  renderTranscript() {
    clear(this.transcript);
    const messages = this.chat?.messages || [];
    if (!messages.length && !this.running) {
      this.transcript.append(
        this.noProvider
          ? noProvider()
          : h('div.empty', { id: 'empty-chat' }, h('p', {}, 'Ask anything. Replies stream in as they are written.')),
      );
    }
    messages.forEach((message, index) => this.transcript.append(this.renderStored(message, index)));
    if (this.lastUsage) {
      const replies = this.transcript.querySelectorAll('.message.assistant');
      replies[replies.length - 1]?.append(usageLine(this.lastUsage));
    }
    this.scrollDown(true);
  }

  /** A stored message with its actions. */
  renderStored(message, index) {
    const el = renderMessage(message, this.chatId);
    if (message.role === 'assistant') {
      addCodeCopy(el);
      el.append(
        actionBar('assistant', {
          Copy: () => copyText(message.content, 'Reply'),
          Regenerate: () => forkChat(this, index, 'regenerate'),
        }),
      );
    } else if (message.role === 'user') {
      el.append(
        actionBar('user', {
          Copy: () => copyText(message.content, 'Message'),
          Edit: () => editMessage(this, el, message, index),
        }),
      );
    }
    el.dataset.index = String(index);
    return el;
  }

  /** Runs the stored transcript as it is (a fork's last message is the one asked). */
  runStored() {
    const provider = this.providerSelect.value;
    const model = this.modelSelect.value;
    if (!provider || !model) {
      this.showError('Choose a provider and a model first.');
      return;
    }
    const body = { chatId: this.chat.id, provider, model, messages: this.history() };
    this.run(body, { text: '', attachments: [] });
  }

  /** A keyboard shortcut's command (`shortcuts.js`); true when it applied here. */
  command(name) {
    return chatCommand(this, name);
  }

  scrollDown(force) {
    const el = document.scrollingElement;
    const near = el.scrollHeight - el.scrollTop - el.clientHeight < 160;
    if (force || near) window.scrollTo({ top: el.scrollHeight });
  }

  // ---- composer -------------------------------------------------------------------------

  onKey(event) {
    // keyCode 229: an input method is composing (Safari reports isComposing late).
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing && event.keyCode !== 229) {
      event.preventDefault();
      this.send();
    }
  }

  autosize() {
    this.input.style.height = 'auto';
    this.input.style.height = `${Math.min(this.input.scrollHeight, 240)}px`;
  }

  async addFiles(files) {
    const { added, errors } = await readFiles([...files], this.pending);
    this.pending.push(...added);
    this.fileInput.value = '';
    for (const error of errors) toast(error, 'error');
    this.renderChips();
  }

  renderChips() {
    clear(this.chips, 
      this.pending.map((a) =>
        h(
          'li.chip',
          { dataset: { kind: a.kind } },
          a.kind === 'image' && imageSource(a) ? h('img', { src: imageSource(a), alt: '' }) : null,
          h('span', {}, a.filename, ` · ${formatBytes(a.sizeBytes)}`, a.truncated ? ' · truncated' : ''),
          h(
            'button.icon',
            { type: 'button', 'aria-label': `Remove ${a.filename}`, onclick: () => { this.pending = this.pending.filter((p) => p !== a); this.renderChips(); } },
            '×',
          ),
        ),
      ),
    );
    this.chips.hidden = this.pending.length === 0;
  }

  updateSendable() {
    this.sendButton.disabled = this.running || this.sending || !this.modelSelect.value;
    this.sendButton.hidden = this.running;
    this.stopButton.hidden = !this.running;
    // Usable once the run is registered (its `meta` came), until a stop of it is asked.
    const stopping = this.stopping !== null && this.stopping === this.runSeq;
    this.stopButton.disabled = !this.stoppable || stopping;
    this.stopButton.textContent = stopping ? 'Stopping…' : 'Stop';
  }

  /** Asks the server to stop the running reply; its stream then ends with `done`. */
  async stop() {
    if (!this.running || !this.stoppable || this.stopping === this.runSeq || !this.chat) return;
    const run = this.runSeq;
    this.stopping = run;
    this.updateSendable();
    try {
      await api.post(`v1/chats/${encodeURIComponent(this.chat.id)}/stream/cancel`, undefined, { signal: this.abort.signal });
    } catch (err) {
      // 404: the reply ended on its own meanwhile.
      if (err.name !== 'AbortError' && err.status !== 404) toast(`Could not stop the reply: ${err.message}`, 'error');
    } finally {
      // A later run's button is not this stop's to change.
      if (this.stopping === run) this.stopping = null;
      this.updateSendable();
    }
  }

  /**
   * The stored transcript as history (tool logs left out: the server does not send them),
   * beside a new message carrying `attachments`.
   */
  history(attachments = []) {
    return historyRows(this.chat?.messages || [], attachments.reduce((n, a) => n + payloadBytes(a), 0));
  }

  async send() {
    if (this.running || this.sending) return;
    const text = this.input.value.trim();
    if (!text && !this.pending.length) return;
    // The failed message sent again as it was is a retry: it is stored already, and sending it
    // as a new turn would give the model the same words twice.
    if (this.failed && text === this.failed.draft.text.trim() && this.pending === this.failed.draft.attachments) {
      this.retry();
      return;
    }
    const provider = this.providerSelect.value;
    const model = this.modelSelect.value;
    if (!provider || !model) {
      this.showError('Choose a provider and a model first.');
      return;
    }
    const attachments = this.pending;
    const user = { role: 'user', content: text };
    if (attachments.length) user.attachments = attachments;
    const draft = { text: this.input.value, attachments };
    this.input.value = '';
    this.pending = [];
    this.renderChips();
    this.autosize();
    this.sending = true;
    this.updateSendable();
    try {
      if (!this.chat) {
        const signal = this.abort.signal;
        const { chat } = await api.post('v1/chats', { provider, model, ...this.settingsBody() }, { signal });
        if (signal.aborted) return;
        this.chat = { ...chat, messages: [] };
        this.chatId = chat.id;
        this.app.adopt(`#/chat/${encodeURIComponent(chat.id)}`);
        this.app.refreshWorkspace();
      }
    } catch (err) {
      if (err.name === 'AbortError') return;
      this.restore(draft);
      this.showError(err.message);
      return;
    } finally {
      this.sending = false;
      this.updateSendable();
    }
    const body = { chatId: this.chat.id, provider, model, messages: [...this.history(attachments), user] };
    this.run(body, draft);
  }

  restore(draft) {
    if (!this.input.value.trim()) this.input.value = draft.text;
    if (!this.pending.length) this.pending = draft.attachments;
    this.renderChips();
    this.autosize();
  }

  retry() {
    if (!this.failed || this.running) return;
    const { body, draft } = this.failed;
    // The retry sends what failed; the kept input is that same message, so it is cleared.
    if (this.input.value === draft.text) {
      this.input.value = '';
      this.pending = [];
      this.renderChips();
    }
    this.run(body, draft);
  }

  showError(message, canRetry = false) {
    clear(this.errorBox, 
      h('p', {}, h('strong', {}, 'The reply failed: '), message),
      canRetry ? h('button', { type: 'button', id: 'retry', onclick: () => this.retry() }, 'Retry') : null,
    );
    this.errorBox.hidden = false;
  }

  hideError() {
    this.errorBox.hidden = true;
    clear(this.errorBox);
  }

  // ---- the live run ---------------------------------------------------------------------

  /** The block a live run writes into: its tool cards, then the reply as it is written. */
  liveBlock(userMessage) {
    this.transcript.querySelector('#empty-chat')?.remove();
    if (userMessage) this.transcript.append(renderMessage({ ...userMessage, metadata: userMessage.attachments ? { attachments: userMessage.attachments } : null }));
    const cards = h('div.tool-cards');
    const reply = h('div.message.assistant.live', { dataset: { role: 'assistant', live: 'true' } });
    const body = h('div.markdown');
    const typing = typingDots('Generating');
    reply.append(body, typing);
    const block = h('div.live-run', { id: 'live-run' }, cards, reply);
    this.transcript.append(block);
    this.scrollDown(true);
    return { block, cards: new ToolCards(cards), body, typing };
  }

  async run(body, draft) {
    this.hideError();
    this.failed = null;
    this.lastUsage = null;
    for (const old of this.transcript.querySelectorAll('.live-run.failed')) old.remove();
    // A retried message is usually stored already (a failed run keeps its input row).
    const userMessage = body.messages[body.messages.length - 1];
    const stored = [...(this.chat?.messages || [])].reverse().find((m) => m.role !== 'tool');
    const shown = stored?.role === 'user' && stored.content === userMessage.content;
    const live = this.liveBlock(shown ? null : userMessage);
    await this.read(live, {
      open: () => api.openStream('v1/chat-completions/stream', body, { signal: this.abort.signal }),
      onFail: (message) => {
        this.failed = { body, draft };
        if (draft) this.restore(draft);
        this.showError(message, true);
      },
    });
  }

  attach() {
    const live = this.liveBlock(null);
    // The replay repeats the tool calls already stored (and shown) as messages.
    const stored = (this.chat.messages || []).filter((m) => m.role === 'tool').map((m) => m.metadata?.toolCallId);
    this.read(live, {
      skipCalls: new Set(stored.filter(Boolean)),
      open: () => api.openStream(this.attachPath(), undefined, { signal: this.abort.signal }),
      onFail: (message) => this.showError(message),
    });
  }

  attachPath() {
    return `v1/chats/${encodeURIComponent(this.chat.id)}/stream/attach`;
  }

  async read(live, { open, onFail, skipCalls = new Set() }) {
    this.running = true;
    this.runSeq += 1;
    this.stoppable = false;
    this.updateSendable();
    this.app.markRunning('chat', this.chat.id, true);
    let text = '';
    // The reply is rendered again as it grows, at most once a frame and, for a long reply, no
    // more often than every four times what one rendering cost: rendering takes at most about
    // a fifth of the time the reply streams, however long it grows.
    let timer = 0;
    let scheduled = false;
    let stopped = false;
    let notBefore = 0;
    const paint = () => {
      scheduled = false;
      const started = performance.now();
      live.body.replaceChildren(renderMarkdown(text));
      const cost = performance.now() - started;
      notBefore = performance.now() + Math.min(1000, cost * 4);
      this.scrollDown(false);
    };
    const schedule = () => {
      if (scheduled) return;
      scheduled = true;
      const wait = Math.max(0, notBefore - performance.now());
      timer = setTimeout(() => requestAnimationFrame(() => stopped || paint()), wait);
    };
    let outcome = null;
    try {
      outcome = await follow({
        open,
        attachPath: this.attachPath(),
        signal: this.abort.signal,
        onEvent: ({ event, data }) => {
          if (event === 'meta') {
            // A replay starts again from the beginning. The run is registered: it can be stopped.
            text = '';
            if (!this.stoppable) {
              this.stoppable = true;
              this.updateSendable();
            }
          } else if (event === 'delta' && typeof data.text === 'string') {
            text += data.text;
            schedule();
          } else if (event === 'tool_call' && !skipCalls.has(data.toolCallId)) {
            live.cards.upsert(data);
            this.scrollDown(false);
          }
        },
      });
    } catch (err) {
      if (err.name !== 'AbortError') outcome = { event: 'error', data: { message: err.message } };
    } finally {
      stopped = true;
      clearTimeout(timer);
      this.running = false;
      this.updateSendable();
    }
    // A view left mid-run stops reading; the run goes on on the server (and keeps its mark).
    if (this.abort.signal.aborted || !outcome) return;
    this.app.markRunning('chat', this.chat.id, false);
    live.typing.remove();
    if (outcome.event === 'done') {
      // The whole reply at once, in case the canonical reload below fails.
      if (typeof outcome.data.text === 'string') text = outcome.data.text;
      paint();
      this.lastUsage = outcome.data.usage || null;
      await this.reload();
      const reply = (this.chat.messages || []).findLast((m) => m.role === 'assistant');
      announce(reply?.metadata?.stopped ? 'Reply stopped' : 'Reply finished');
      this.suggestTitle();
    } else if (outcome.event === 'gone') {
      await this.reload();
    } else {
      live.block.classList.add('failed');
      if (text) paint();
      await this.reload({ keepLive: true });
      onFail(outcome.data?.message || 'the reply failed');
    }
    this.app.refreshWorkspace();
  }

  /** The stored chat, canonical after a run. With `keepLive` a failed run's block stays shown. */
  async reload({ keepLive = false } = {}) {
    try {
      const { chat } = await api.get(`v1/chats/${encodeURIComponent(this.chat.id)}`, { signal: this.abort.signal });
      this.chat = chat;
      const live = keepLive ? this.transcript.querySelector('#live-run') : null;
      this.renderTranscript();
      if (live) {
        live.removeAttribute('id');
        this.transcript.append(live);
      }
      this.app.setTitle(chat.title || NEW_CHAT_TITLE);
    } catch (err) {
      if (err.name !== 'AbortError') toast(`Could not reload the chat: ${err.message}`, 'error');
    }
  }

  async suggestTitle() {
    const chat = this.chat;
    if (!chat || (chat.title && chat.title.trim())) return;
    const first = chat.messages.find((m) => m.role === 'user');
    if (!first || !first.content.trim()) return;
    try {
      const { chat: titled } = await api.post('v1/chats/title/suggest', { chatId: chat.id, content: first.content });
      if (this.abort.signal.aborted || !titled.title) return;
      this.chat = { ...this.chat, title: titled.title };
      this.app.setTitle(titled.title);
      this.app.refreshWorkspace();
    } catch {
      // No title model here: the chat keeps its placeholder, renamable by hand.
    }
  }
}

function usageLine(usage) {
  return h(
    'p.usage',
    { id: 'usage' },
    `${usage.inputTokens} in · ${usage.outputTokens} out · ${usage.totalTokens} tokens`,
  );
}

/** One stored message (of the chat `chatId`, whose files a tool card may show). */
export function renderMessage(message, chatId) {
  const role = message.role;
  if (role === 'tool') {
    const meta = message.metadata || {};
    const call = { ...meta, name: meta.name || message.name, content: message.content, chatId };
    return h('div.message.tool', { dataset: { role } }, toolCard(call));
  }
  if (role === 'system') {
    return h(
      'details.message.system',
      { dataset: { role } },
      h('summary', {}, 'Hidden context (system message)'),
      h('div.markdown', {}, renderMarkdown(message.content)),
    );
  }
  const el = h(`div.message.${role === 'assistant' ? 'assistant' : 'user'}`, { dataset: { role } });
  if (role === 'assistant') {
    el.append(h('div.markdown', {}, renderMarkdown(message.content)));
    if (message.metadata?.stopped) el.append(h('p.stopped-note', {}, 'Stopped'));
  } else {
    el.append(h('div.text', {}, message.content));
    const attachments = message.metadata?.attachments;
    if (Array.isArray(attachments) && attachments.length) {
      el.append(h('ul.message-attachments', {}, attachments.map(renderAttachment)));
    }
  }
  return el;
}

function renderAttachment(a) {
  if (a.kind === 'image') {
    const src = imageSource(a);
    return h('li.attachment.image', {}, src ? h('img', { src, alt: a.filename || 'image', loading: 'lazy' }) : null, h('span', {}, a.filename || 'image'));
  }
  return h(
    'li.attachment.text',
    {},
    h(
      'details',
      {},
      h('summary', {}, a.filename || 'text', ` · ${formatBytes(a.sizeBytes || 0)}`, a.truncated ? ' · truncated' : ''),
      h('pre', {}, a.text || ''),
    ),
  );
}
