// What a user can do with a message of the transcript: copy it (its raw markdown, or one code
// block's text), and edit a message or regenerate a reply. The contract has no message edit, so
// both fork: a new chat (`POST /v1/chats` with the transcript up to that point, its title saying
// where it came from) whose reply then runs, and the original chat stays as it was.

import { copyText, h } from './dom.js';

/** The transcript rows before `index` as a new chat's `messages` (tool logs left out). */
export function rowsBefore(messages, index) {
  return messages
    .slice(0, index)
    .filter((m) => m.role !== 'tool')
    .map((m) => {
      const row = { role: m.role, content: m.content };
      if (m.name) row.name = m.name;
      const attachments = m.metadata?.attachments;
      if (m.role === 'user' && Array.isArray(attachments) && attachments.length) row.attachments = attachments;
      return row;
    });
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
  const asked = messages[at];
  const rows = rowsBefore(messages, at);
  const user = rowsBefore([asked], 1)[0];
  if (how === 'edit') user.content = text;
  const title = (chat.title || '').trim() || 'New chat';
  const suffix = how === 'edit' ? ' · edited' : ' · regenerated';
  return {
    messages: [...rows, user],
    title: `${title.slice(0, 500 - suffix.length)}${suffix}`,
  };
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
export function editForm(original, { onSend, onCancel }) {
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
    if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation();
      onCancel();
    } else if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  return { form, input };
}
