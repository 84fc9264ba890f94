// The workspace list: chats and searches together, newest first, starred ones first, filtered
// by words and kind; each item renamed (chats: searches have no rename in the API), starred or
// deleted from its menu. Items whose run is going on carry the generating mark, restored from
// GET /v1/active-runs.
//
// The whole history is reachable: chats and searches come a page at a time from
// `GET /v1/chats?limit=` and `GET /v1/searches?limit=` (their `nextCursor`), merged by time. A
// merged list is only shown down to where both lists are complete, so an older chat never hides
// behind a search page that went further back; "Show older" loads the next pages. The filter
// box asks the server for the titles holding its words, whatever their age (the same lists
// with `?title=`, paged the same way; the loaded titles are filtered while it answers), and also
// searches every message's text (`GET /v1/message-search`), whose hits open their chat.

import * as api from './api.js';
import { clear, formatTime, h, toast } from './dom.js';

/** A page's size, and the API's most; a refresh asks again for as many as are loaded. */
const PAGE = 100;
const MAX_PAGE = 1000;
/** The longest title, and so the longest words the server is asked to find in titles. */
const MAX_TITLE = 500;
/** Typing pauses this long before the titles and the message text are searched. */
const SEARCH_DELAY_MS = 250;

export class Sidebar {
  constructor(app) {
    this.app = app;
    this.items = [];
    this.loaded = { chat: [], search: [] };
    this.cursors = { chat: null, search: null };
    this.running = { chat: new Set(), search: new Set() };
    this.hits = null; // the message search's state for the current words
    this.titled = null; // the lists of the rows titled with the current words, as `loaded`
    this.list = document.getElementById('workspace');
    this.more = document.getElementById('show-older');
    this.hitsSection = document.getElementById('message-hits');
    this.filterText = document.getElementById('filter-text');
    this.filterKind = document.getElementById('filter-kind');
    this.filterText.addEventListener('input', () => {
      this.render();
      this.searchTitles();
      this.searchMessages();
    });
    this.filterKind.addEventListener('change', () => this.render());
    this.more.addEventListener('click', () => this.loadOlder());
  }

  /**
   * The lists again from their newest rows, as many as were loaded, with the running marks; the
   * titled rows too while they are shown (as many of them), so a rename, a star or a deletion
   * shows at once there as well.
   */
  async refresh() {
    const generation = (this.generation = (this.generation || 0) + 1);
    const titled = this.titledShown() ? this.titled : null;
    const again = (type, lists, title) => this.reload(type, Math.max(PAGE, lists.loaded[type].length), title);
    try {
      const [chats, searches, runs, titledChats, titledSearches] = await Promise.all([
        again('chat', this),
        again('search', this),
        api.get('v1/active-runs'),
        titled && again('chat', titled, titled.words),
        titled && again('search', titled, titled.words),
      ]);
      if (generation !== this.generation) return; // a later refresh is on its way
      this.loaded = { chat: chats.rows, search: searches.rows };
      this.cursors = { chat: chats.next, search: searches.next };
      this.running.chat = new Set(runs.chats);
      this.running.search = new Set(runs.searches);
      this.merge();
      // Unless other words' rows came meanwhile.
      if (titled && titled === this.titled) {
        titled.loaded = { chat: titledChats.rows, search: titledSearches.rows };
        titled.cursors = { chat: titledChats.next, search: titledSearches.next };
        titled.items = merged(titled.loaded, titled.cursors);
      }
      this.render();
    } catch (err) {
      if (err instanceof api.ApiError && err.status === 401) return;
      toast(`Could not load the list: ${err.message}`, 'error');
    }
  }

  /**
   * The newest `count` rows of one list (pages of at most the API's 1000), of those titled with
   * `title` when given, and its cursor.
   */
  async reload(type, count, title) {
    const rows = [];
    let next = null;
    do {
      const page = await this.page(type, Math.min(MAX_PAGE, count - rows.length), next, title);
      rows.push(...page.rows);
      next = page.next;
    } while (next && rows.length < count);
    return { rows, next };
  }

  /** One page of a list (of the rows titled with `title` when given): its rows (typed) and the next page's cursor, or null. */
  async page(type, limit, cursor, title, signal) {
    const path = type === 'chat' ? 'v1/chats' : 'v1/searches';
    const after = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
    const titled = title ? `&title=${encodeURIComponent(title)}` : '';
    const page = await api.get(`${path}?limit=${limit}${after}${titled}`, signal ? { signal } : undefined);
    const rows = type === 'chat' ? page.chats : page.searches;
    return { rows: rows.map((r) => ({ ...r, type })), next: page.nextCursor || null };
  }

  /**
   * The next page of each list that has one: of the whole lists, or of the titled rows while
   * they are shown. Pages following cursors a refresh (or other words) replaced are dropped.
   */
  async loadOlder() {
    const titled = this.titledShown() ? this.titled : null;
    const lists = titled || this;
    const generation = this.generation;
    this.more.disabled = true;
    try {
      const types = ['chat', 'search'].filter((type) => lists.cursors[type]);
      const pages = await Promise.all(types.map((type) => this.page(type, PAGE, lists.cursors[type], titled?.words)));
      if (titled ? titled !== this.titled : generation !== this.generation) return;
      types.forEach((type, i) => {
        const known = new Set(lists.loaded[type].map((item) => item.id));
        lists.loaded[type].push(...pages[i].rows.filter((row) => !known.has(row.id)));
        lists.cursors[type] = pages[i].next;
      });
      lists.items = merged(lists.loaded, lists.cursors);
      this.render();
    } catch (err) {
      toast(`Could not load older items: ${err.message}`, 'error');
    } finally {
      this.more.disabled = false;
    }
  }

  /**
   * `items`: both lists merged, newest first, down to the oldest time both are complete to: a
   * list with more pages is only known down to its last loaded row. (Shown for "All"; one kind,
   * or the starred, show every loaded row.)
   */
  merge() {
    this.items = merged(this.loaded, this.cursors);
  }

  // ---- titles, whatever their age ---------------------------------------------------------

  /**
   * The rows titled with the filter's words, asked of the server once typing pauses. Words
   * longer than a title can be (500 characters) filter the loaded rows only.
   */
  searchTitles() {
    clearTimeout(this.titleTimer);
    this.titleAbort?.abort();
    const words = this.filterText.value.trim();
    if (!words || [...words].length > MAX_TITLE) {
      this.titled = null;
      return;
    }
    this.titleTimer = setTimeout(() => this.fetchTitled(words), SEARCH_DELAY_MS);
  }

  /** The first page of each list's rows titled with `words`. */
  async fetchTitled(words) {
    this.titleAbort?.abort();
    this.titleAbort = new AbortController();
    const signal = this.titleAbort.signal;
    try {
      const pages = await Promise.all(['chat', 'search'].map((type) => this.page(type, PAGE, null, words, signal)));
      if (signal.aborted) return;
      const loaded = { chat: pages[0].rows, search: pages[1].rows };
      const cursors = { chat: pages[0].next, search: pages[1].next };
      this.titled = { words, loaded, cursors, items: merged(loaded, cursors) };
      this.render();
    } catch (err) {
      if (err.name === 'AbortError') return;
      toast(`Could not search the titles: ${err.message}`, 'error');
    }
  }

  /** Whether the list shows the server's titled rows (they answered for the words typed). */
  titledShown() {
    return Boolean(this.titled && this.titled.words === this.filterText.value.trim());
  }

  markRunning(type, id, running) {
    if (running) this.running[type].add(id);
    else this.running[type].delete(id);
    this.render();
  }

  render() {
    // A rename being typed is not swept away by a refresh; the list catches up after it.
    if (this.list.querySelector('.rename-input')) {
      this.stale = true;
      return;
    }
    this.stale = false;
    this.poll();
    const words = this.filterText.value.trim().toLowerCase();
    const kind = this.filterKind.value;
    // The server's rows titled with the words once they came; until then the loaded ones.
    const titled = this.titledShown();
    const source = titled ? this.titled : { items: this.items, loaded: this.loaded, cursors: this.cursors };
    const pool = kind === 'all' ? source.items : [...source.loaded.chat, ...source.loaded.search].sort(newestFirst);
    const shown = pool
      .filter((item) => {
        if (kind === 'starred' && !item.starred) return false;
        if ((kind === 'chat' || kind === 'search') && item.type !== kind) return false;
        // The server's rows hold the words as its database folds case; the loaded ones here.
        return titled || !words || label(item).toLowerCase().includes(words);
      })
      // Starred first; the server's order (newest first) within each group.
      .sort((a, b) => Number(b.starred) - Number(a.starred));
    const current = location.hash;
    const older = Boolean(source.cursors.chat || source.cursors.search);
    const empty = titled ? 'No title matches.' : this.items.length || older ? 'No loaded title matches.' : 'No chats or searches yet.';
    clear(this.list, shown.length ? shown.map((item) => this.renderItem(item, current)) : h('li.empty-list', {}, empty));
    this.more.hidden = !older;
    this.renderHits();
  }

  // ---- search in message text -----------------------------------------------------------

  /** Searches the messages for the filter's words once typing pauses (two characters or more). */
  searchMessages() {
    clearTimeout(this.searchTimer);
    this.searchAbort?.abort();
    const words = this.filterText.value.trim();
    if (words.length < 2) {
      this.hits = null;
      this.renderHits();
      return;
    }
    this.searchTimer = setTimeout(() => this.fetchHits(words, null), SEARCH_DELAY_MS);
  }

  async fetchHits(words, cursor) {
    this.searchAbort = new AbortController();
    const signal = this.searchAbort.signal;
    if (!cursor) this.hits = { words, list: [], next: null, loading: true };
    else Object.assign(this.hits, { loading: true, error: null });
    this.renderHits();
    try {
      const query = `q=${encodeURIComponent(words)}&limit=20${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = await api.get(`v1/message-search?${query}`, { signal });
      if (signal.aborted || this.hits?.words !== words) return;
      this.hits.list.push(...page.hits);
      this.hits.next = page.nextCursor;
    } catch (err) {
      if (err.name === 'AbortError') return;
      if (this.hits) this.hits.error = err.message;
    }
    if (this.hits) this.hits.loading = false;
    this.renderHits();
  }

  renderHits() {
    const hits = this.hits;
    this.hitsSection.hidden = !hits;
    if (!hits) return;
    const words = hits.words.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean);
    const status = hits.loading
      ? 'Searching messages…'
      : hits.error
        ? `Message search failed: ${hits.error}`
        : hits.list.length
          ? `${hits.list.length}${hits.next ? '+' : ''} in messages`
          : 'No message holds these words.';
    clear(
      this.hitsSection,
      h('h2.hits-title', { id: 'message-hits-title' }, 'In messages'),
      h('p.hits-status', { role: 'status' }, status),
      hits.list.length
        ? h(
            'ul.hits',
            { 'aria-labelledby': 'message-hits-title' },
            hits.list.map((hit) =>
              h(
                'li.hit',
                { dataset: { chat: hit.chatId } },
                h(
                  'a.hit-link',
                  { href: `#/chat/${encodeURIComponent(hit.chatId)}` },
                  h('span.hit-chat', {}, hit.chatTitle?.trim() || 'New chat'),
                  h('span.hit-snippet', {}, marked(hit.snippet, words)),
                ),
              ),
            ),
          )
        : null,
      hits.next && !hits.loading
        ? h('button.more-hits', { type: 'button', onclick: () => this.fetchHits(hits.words, hits.next) }, 'More messages')
        : null,
    );
  }

  renderItem(item, current) {
    const href = `#/${item.type}/${encodeURIComponent(item.id)}`;
    const running = this.running[item.type].has(item.id);
    const link = h(
      'a.item-link',
      { href, 'aria-current': current === href ? 'page' : null },
      h(`span.kind.kind-${item.type}`, { 'aria-label': item.type === 'chat' ? 'Chat' : 'Search', title: item.type === 'chat' ? 'Chat' : 'Search' }),
      h('span.item-title', {}, label(item)),
      running ? h('span.running', { role: 'img', 'aria-label': 'generating', title: 'generating' }) : null,
      h('span.item-time', {}, formatTime(item.updatedAt)),
    );
    const star = h(
      'button.icon.star',
      {
        type: 'button',
        'aria-pressed': String(item.starred),
        'aria-label': item.starred ? `Unstar ${label(item)}` : `Star ${label(item)}`,
        onclick: () => this.star(item),
      },
      item.starred ? '★' : '☆',
    );
    const menu = h(
      'details.item-menu',
      {},
      h('summary', { 'aria-label': `Actions for ${label(item)}` }, '⋯'),
      h(
        'div.menu',
        {},
        item.type === 'chat' ? h('button', { type: 'button', class: 'rename', onclick: () => this.rename(li, item) }, 'Rename') : null,
        h('button', { type: 'button', class: 'delete', onclick: (e) => this.remove(e.currentTarget, item) }, 'Delete'),
      ),
    );
    const li = h('li.item', { dataset: { type: item.type, id: item.id, starred: String(item.starred) } }, link, star, menu);
    return li;
  }

  /** While something runs, the list asks again every few seconds (its marks end with it). */
  poll() {
    const running = this.running.chat.size + this.running.search.size > 0;
    if (running && !this.pollTimer) {
      this.pollTimer = setTimeout(() => {
        this.pollTimer = 0;
        this.refresh();
      }, 5000);
    }
  }

  async star(item) {
    const path = item.type === 'chat' ? 'v1/chats' : 'v1/searches';
    try {
      await api.patch(`${path}/${encodeURIComponent(item.id)}/star`, { starred: !item.starred });
      await this.refresh();
    } catch (err) {
      toast(`Could not star: ${err.message}`, 'error');
    }
  }

  rename(li, item) {
    const input = h('input.rename-input', { type: 'text', value: item.title || '', 'aria-label': 'New title', maxlength: 500 });
    let done = false;
    const finish = async (save) => {
      if (done) return;
      done = true;
      const title = input.value.trim();
      input.remove();
      if (save && title && title !== item.title) {
        try {
          await api.patch(`v1/chats/${encodeURIComponent(item.id)}`, { title });
          if (location.hash === `#/chat/${encodeURIComponent(item.id)}`) this.app.setTitle(title);
        } catch (err) {
          toast(`Could not rename: ${err.message}`, 'error');
        }
      }
      await this.refresh();
    };
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        e.preventDefault();
        finish(true);
      } else if (e.key === 'Escape') {
        finish(false);
      }
    });
    input.addEventListener('blur', () => finish(true));
    li.replaceChildren(input);
    input.focus();
    input.select();
  }

  async remove(button, item) {
    // Two clicks: the first asks, the second deletes.
    if (button.dataset.confirm !== 'yes') {
      button.dataset.confirm = 'yes';
      button.textContent = 'Delete for good?';
      return;
    }
    const path = item.type === 'chat' ? 'v1/chats' : 'v1/searches';
    try {
      await api.del(`${path}/${encodeURIComponent(item.id)}`);
      if (location.hash === `#/${item.type}/${encodeURIComponent(item.id)}`) this.app.navigate(item.type === 'chat' ? '#/' : '#/search');
      await this.refresh();
    } catch (err) {
      toast(`Could not delete: ${err.message}`, 'error');
    }
  }
}

/**
 * Two lists merged, newest first, down to the oldest time both are complete to: a list with
 * more pages is only known down to its last loaded row.
 */
function merged(loaded, cursors) {
  const floors = ['chat', 'search']
    .filter((type) => cursors[type] && loaded[type].length)
    .map((type) => loaded[type][loaded[type].length - 1].updatedAt);
  const floor = floors.length ? floors.reduce((a, b) => (a > b ? a : b)) : '';
  return [...loaded.chat, ...loaded.search].filter((item) => item.updatedAt >= floor).sort(newestFirst);
}

export function label(item) {
  if (item.title && item.title.trim()) return item.title;
  if (item.type === 'search') return item.query || 'Untitled search';
  return 'New chat';
}

function newestFirst(a, b) {
  return a.updatedAt < b.updatedAt ? 1 : a.updatedAt > b.updatedAt ? -1 : 0;
}

/** `text` with each place a word starts marked (<mark>), as text nodes. */
function marked(text, words) {
  const lower = text.toLowerCase();
  const parts = [];
  let at = 0;
  while (at < text.length) {
    let next = -1;
    let length = 0;
    for (const word of words) {
      const found = lower.indexOf(word, at);
      if (found !== -1 && (next === -1 || found < next)) {
        next = found;
        length = word.length;
      }
    }
    if (next === -1) break;
    if (next > at) parts.push(text.slice(at, next));
    parts.push(h('mark', {}, text.slice(next, next + length)));
    at = next + length;
  }
  parts.push(text.slice(at));
  return parts;
}
