// What a user can do with a message of the transcript (`ChatView` calls these with itself):
// copy it (its raw markdown, or one code block's text), and edit a message or regenerate a
// reply. The contract has no message edit, so both fork: a new chat (`POST /v1/chats` with the
// transcript up to that point, its title saying where it came from) whose reply then runs, and
// the original chat stays as it was. Also the keyboard shortcuts' commands on a chat.

import * as api from './api.js';
import { LIMITS, payloadBytes } from './attachments.js';
import { copyText, h, toast } from './dom.js';

/**
 * Stored messages as a request's history rows (tool logs left out: the server does not take
 * them). Older attachments are dropped, oldest first, when the whole and `extraBytes` more
 * would pass the body cap.
 */
export function historyRows(messages, extraBytes = 0) {
  const out = messages
    .filter((m) => m.role !== 'tool')
    .map((m) => {
      const row = { role: m.role, content: m.content };
      if (m.name) row.name = m.name;
      const attachments = m.metadata?.attachments;
      if (m.role === 'user' && Array.isArray(attachments) && attachments.length) row.attachments = attachments;
      return row;
    });
  const weight = (row) => (row.attachments || []).reduce((k, a) => k + payloadBytes(a), 0);
  let total = out.reduce((n, row) => n + weight(row), 0);
  const budget = LIMITS.bodyBytes - 512 * 1024 - extraBytes;
  for (const row of out) {
    if (total <= budget) break;
    total -= weight(row);
    delete row.attachments;
  }
  return out;
}

/**
 * The fork's `messages` and title: an edit replaces the user message at `index` with `text`; a
 * regeneration asks again the user message the reply at `index` answered. Null when there is
 * no such user message.
 */
export function forkOf(chat, index, how, text) {
  const messages = chat.messages || [];
  let at = index;
  if (how === 'regenerate') {
    while (at >= 0 && messages[at].role !== 'user') at -= 1;
    if (at < 0) return null;
  }
  const rows = historyRows(messages.slice(0, at + 1));
  if (how === 'edit') rows[rows.length - 1].content = text;
  // Counted in characters (code points), as the server counts a title's 500.
  const title = [...((chat.title || '').trim() || 'New chat')];
  const suffix = how === 'edit' ? ' · edited' : ' · regenerated';
  return { messages: rows, title: `${title.slice(0, 500 - suffix.length).join('')}${suffix}` };
}

/** A row of buttons under a message; `actions` maps a label to its handler (or null). */
export function actionBar(role, actions) {
  const buttons = Object.entries(actions)
    .filter(([, run]) => run)
    .map(([label, run]) =>
      h(
        `button.action.action-${label.toLowerCase().split(' ')[0]}`,
        { type: 'button', 'aria-label': `${label} (${role === 'user' ? 'your message' : 'reply'})`, title: label, onclick: run },
        label,
      ),
    );
  return h('div.message-actions', {}, buttons);
}

/** Gives every code block under `root` a copy button for its text. */
export function addCodeCopy(root) {
  for (const pre of root.querySelectorAll('pre')) {
    if (pre.parentElement?.classList.contains('code-block')) continue;
    const block = h('div.code-block');
    pre.replaceWith(block);
    const lang = pre.querySelector('code')?.dataset.lang;
    block.append(
      h(
        'button.copy-code',
        { type: 'button', 'aria-label': `Copy the ${lang ? `${lang} ` : ''}code`, onclick: () => copyText(pre.textContent, 'Code') },
        'Copy',
      ),
      pre,
    );
  }
  return root;
}

/** The edit form that takes a user message's place until it is sent or cancelled. */
function editForm(original, { onSend, onCancel }) {
  const input = h('textarea.edit-input', { rows: 3, 'aria-label': 'Edit the message' });
  input.value = original;
  const form = h(
    'form.edit-form',
    {
      onsubmit: (e) => {
        e.preventDefault();
        const text = input.value.trim();
        if (text) onSend(text);
      },
    },
    input,
    h(
      'div.row',
      {},
      h('button.primary.send-edit', { type: 'submit' }, 'Send as a new chat'),
      h('button.cancel-edit', { type: 'button', onclick: onCancel }, 'Cancel'),
    ),
    h('p.hint', {}, 'The original chat stays as it is.'),
  );
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && !e.isComposing) {
      e.preventDefault();
      e.stopPropagation();
      onCancel();
      // keyCode 229: an input method is composing (Safari reports isComposing late).
    } else if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && e.keyCode !== 229) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  return { form, input };
}

/** Turns the user message `el` into its edit form; sending it forks the chat there. */
export function editMessage(view, el, message, index) {
  if (view.running || el.querySelector('.edit-form')) return;
  const text = el.querySelector('.text');
  const actions = el.querySelector('.message-actions');
  const { form, input } = editForm(message.content, {
    onSend: (edited) => forkChat(view, index, 'edit', edited),
    onCancel: () => {
      form.replaceWith(text);
      actions.hidden = false;
      actions.querySelector('.action-edit')?.focus();
    },
  });
  text.replaceWith(form);
  actions.hidden = true;
  input.focus();
  input.setSelectionRange(input.value.length, input.value.length);
}

/**
 * A new chat with the transcript up to the message at `index` (edited, or asked again for a
 * regeneration), opened with its reply running; the view's chat is left as it is.
 */
export async function forkChat(view, index, how, text) {
  if (!view.chat || view.forking) return;
  const fork = forkOf(view.chat, index, how, text);
  const provider = view.providerSelect.value;
  const model = view.modelSelect.value;
  if (!fork) return;
  if (!provider || !model) {
    view.showError('Choose a provider and a model first.');
    return;
  }
  view.forking = true;
  try {
    const body = { provider, model, title: fork.title, messages: fork.messages, ...view.settingsBody() };
    const { chat } = await api.post('v1/chats', body);
    view.app.refreshWorkspace();
    // A view left meanwhile does not take the page to the fork; the list shows it.
    if (!view.abort.signal.aborted) view.app.openFork(chat.id);
  } catch (err) {
    toast(`Could not start the new chat: ${err.message}`, 'error');
  } finally {
    view.forking = false;
  }
}

/** A keyboard shortcut's command (`shortcuts.js`) on a chat view; true when it applied. */
export function chatCommand(view, name) {
  const messages = view.chat?.messages || [];
  const last = (role) => messages.findLastIndex((m) => m.role === role);
  switch (name) {
    case 'focus-composer':
      view.input.focus();
      return true;
    case 'stop':
      if (!view.running) return false;
      view.stop();
      return true;
    case 'copy-reply': {
      const at = last('assistant');
      if (at < 0) return false;
      copyText(messages[at].content, 'Reply');
      return true;
    }
    case 'copy-code': {
      const blocks = view.transcript.querySelectorAll('.message.assistant pre');
      if (!blocks.length) return false;
      copyText(blocks[blocks.length - 1].textContent, 'Code');
      return true;
    }
    case 'edit-last': {
      const at = last('user');
      const el = view.transcript.querySelector(`.message.user[data-index="${at}"]`);
      if (!el) return false;
      editMessage(view, el, messages[at], at);
      return true;
    }
    case 'regenerate': {
      const at = last('assistant');
      if (at < 0 || view.running) return false;
      forkChat(view, at, 'regenerate');
      return true;
    }
    default:
      return false;
  }
}
