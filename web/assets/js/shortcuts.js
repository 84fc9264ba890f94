// The keyboard shortcuts and their help sheet. One table says which keys do what, for both the
// handler and the sheet. Ctrl stands for ⌘ on a Mac; a shortcut with Ctrl works while typing,
// the others only where they cannot be text.

import { h } from './dom.js';

/** [keys shown, test on a keydown, command] */
const SHORTCUTS = [
  ['Ctrl+Shift+O', (e) => ctrl(e) && e.shiftKey && e.code === 'KeyO', 'new-chat', 'Start a new chat'],
  ['Shift+Esc', (e) => !ctrl(e) && e.shiftKey && e.key === 'Escape', 'focus-composer', 'Focus the message box'],
  ['Esc', (e) => !ctrl(e) && !e.shiftKey && e.key === 'Escape', 'stop', 'Stop the reply being written'],
  ['Ctrl+Shift+C', (e) => ctrl(e) && e.shiftKey && e.code === 'KeyC', 'copy-reply', 'Copy the last reply (markdown)'],
  ['Ctrl+Shift+;', (e) => ctrl(e) && e.shiftKey && e.code === 'Semicolon', 'copy-code', 'Copy the last code block'],
  ['Ctrl+Shift+E', (e) => ctrl(e) && e.shiftKey && e.code === 'KeyE', 'edit-last', 'Edit your last message (as a new chat)'],
  ['Ctrl+Shift+G', (e) => ctrl(e) && e.shiftKey && e.code === 'KeyG', 'regenerate', 'Regenerate the last reply (as a new chat)'],
  ['Ctrl+K', (e) => ctrl(e) && !e.shiftKey && e.code === 'KeyK', 'find', 'Filter the list and find in messages'],
  ['Ctrl+/', (e) => ctrl(e) && (e.code === 'Slash' || e.key === '/'), 'help', 'Show these shortcuts'],
];

function ctrl(e) {
  return (e.ctrlKey || e.metaKey) && !e.altKey;
}

/** The command a keydown asks for, or null. */
export function commandOf(event) {
  const found = SHORTCUTS.find(([, test]) => test(event));
  return found ? found[2] : null;
}

let dialog = null;

/** Opens the help sheet, a modal dialog: focus moves into it and returns where it was. */
export function showHelp() {
  dialog ??= build();
  if (!dialog.open) dialog.showModal();
}

function build() {
  const close = h('button.close-help', { type: 'button', onclick: () => dialog.close() }, 'Close');
  const sheet = h(
    'dialog.help',
    { id: 'help', 'aria-labelledby': 'help-title' },
    h('h2', { id: 'help-title' }, 'Keyboard shortcuts'),
    h(
      'table',
      {},
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Keys'), h('th', { scope: 'col' }, 'Does'))),
      h(
        'tbody',
        {},
        SHORTCUTS.map(([keys, , , what]) => h('tr', {}, h('td', {}, h('kbd', {}, keys)), h('td', {}, what))),
        h('tr', {}, h('td', {}, h('kbd', {}, 'Enter'), ' / ', h('kbd', {}, 'Shift+Enter')), h('td', {}, 'Send / a new line')),
      ),
    ),
    h('p.hint', {}, 'Ctrl is \u2318 on a Mac. Paste an image into the message box to attach it.'),
    close,
  );
  // A click on the backdrop (the dialog's own box, outside its content) closes it.
  sheet.addEventListener('click', (e) => {
    if (e.target === sheet) sheet.close();
  });
  document.body.append(sheet);
  return sheet;
}
