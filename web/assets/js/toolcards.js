// Tool-call cards. A live run sends several `tool_call` events per call with one `toolCallId`
// (initiated, then completed or failed); `ToolCards.upsert` keeps one card per id and moves it
// along. Stored tool messages (`metadata.kind = "tool_call"`) render the same card; a stored
// `python` call's card shows its code highlighted, what it printed, its value, its error, and
// the files it wrote (images inline, the rest as downloads) from python.js. A `file_search`
// card lists the files and pages its passages came from, each opening the file (files.js).

import { formatBytes, h } from './dom.js';
import { openFile } from './files.js';
import { pythonParts } from './python.js';

const STATUS_LABEL = { initiated: 'running', completed: 'completed', failed: 'failed' };

function pretty(value) {
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

/** A card for one tool call (an event's data or a stored message's metadata). */
export function toolCard(call) {
  const status = STATUS_LABEL[call.status] ? call.status : 'completed';
  const card = h('article.tool-card', {
    dataset: { toolCallId: call.toolCallId || '', status },
    'aria-label': `tool ${call.name || ''}: ${STATUS_LABEL[status]}`,
  });
  fill(card, call, status);
  return card;
}

function fill(card, call, status) {
  card.dataset.status = status;
  card.setAttribute('aria-label', `tool ${call.name || ''}: ${STATUS_LABEL[status]}`);
  const head = h(
    'header',
    {},
    h(`span.tool-status.${status}`, { 'aria-hidden': 'true' }),
    h('span.tool-name', {}, call.name || 'tool'),
    h('span.tool-summary', {}, call.summary || ''),
    h(
      'span.tool-state',
      {},
      STATUS_LABEL[status],
      typeof call.durationMs === 'number' ? ` · ${(call.durationMs / 1000).toFixed(1)} s` : '',
    ),
  );
  const parts = [head];
  if (call.name === 'python' && call.args && typeof call.args.code === 'string') {
    parts.push(...pythonParts(call));
    return replace(card, parts);
  }
  if (call.args && Object.keys(call.args).length) {
    parts.push(h('details.tool-args', {}, h('summary', {}, 'Arguments'), h('pre', {}, pretty(call.args))));
  }
  if (call.error) parts.push(h('p.tool-error', {}, call.error));
  // A stored call has its whole result (`content`); a live one only its preview.
  if (call.name === 'file_search') parts.push(sources(call.content ?? call.resultPreview));
  if (typeof call.resultPreview === 'string' && call.resultPreview) {
    parts.push(
      h(
        'details.tool-result',
        {},
        h('summary', {}, `Result preview (${formatBytes(new TextEncoder().encode(call.resultPreview).length)})`),
        h('pre', {}, call.resultPreview),
      ),
    );
  }
  replace(card, parts);
}

/** The files and pages a `file_search` result quotes, once each, as buttons opening the file;
 * nothing when the result is not (or not whole) its JSON. */
function sources(result) {
  let passages;
  try {
    passages = JSON.parse(result).passages;
  } catch {
    return null;
  }
  if (!Array.isArray(passages) || !passages.length) return null;
  const seen = new Set();
  const items = [];
  for (const p of passages) {
    if (!p || typeof p.fileId !== 'string' || typeof p.name !== 'string') continue;
    const label = Number.isInteger(p.page) ? `${p.name}, page ${p.page}` : p.name;
    if (seen.has(label)) continue;
    seen.add(label);
    const open = h('button', { type: 'button', dataset: { fileId: p.fileId } }, label);
    open.addEventListener('click', () => openFile(p.fileId, p.name));
    items.push(h('li', {}, open));
  }
  return items.length ? h('ul.tool-sources', { 'aria-label': 'Sources' }, items) : null;
}

/** The card's new content; whatever the user opened while the call ran stays open. */
function replace(card, parts) {
  const open = new Set([...card.querySelectorAll('details[open]')].map((d) => d.className));
  card.replaceChildren(...parts);
  for (const details of card.querySelectorAll('details')) {
    if (open.has(details.className)) details.open = true;
  }
}

/** The cards of a live run, one per `toolCallId`. */
export class ToolCards {
  constructor(container) {
    this.container = container;
    this.cards = new Map();
  }

  upsert(call) {
    const id = call.toolCallId || `anon-${this.cards.size}`;
    let entry = this.cards.get(id);
    if (!entry) {
      entry = { card: toolCard(call), data: {} };
      this.cards.set(id, entry);
      this.container.append(entry.card);
    }
    // A terminal event carries the whole call; merging keeps args an earlier event had.
    entry.data = { ...entry.data, ...call };
    const status = STATUS_LABEL[entry.data.status] ? entry.data.status : 'initiated';
    fill(entry.card, entry.data, status);
  }
}
