// The workspace list: chats and searches together (GET /v1/workspace-items, newest first),
// starred ones first, filtered by words and kind; each item renamed (chats: searches have no
// rename in the API), starred or deleted from its menu. Items whose run is going on carry the
// generating mark, restored from GET /v1/active-runs.

import * as api from './api.js';
import { clear, formatTime, h, toast } from './dom.js';

export class Sidebar {
  constructor(app) {
    this.app = app;
    this.items = [];
    this.running = { chat: new Set(), search: new Set() };
    this.list = document.getElementById('workspace');
    this.filterText = document.getElementById('filter-text');
    this.filterKind = document.getElementById('filter-kind');
    this.filterText.addEventListener('input', () => this.render());
    this.filterKind.addEventListener('change', () => this.render());
  }

  async refresh() {
    try {
      const [{ items }, runs] = await Promise.all([api.get('v1/workspace-items'), api.get('v1/active-runs')]);
      this.items = items;
      this.running.chat = new Set(runs.chats);
      this.running.search = new Set(runs.searches);
      this.render();
    } catch (err) {
      if (err instanceof api.ApiError && err.status === 401) return;
      toast(`Could not load the list: ${err.message}`, 'error');
    }
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
    const shown = this.items
      .filter((item) => {
        if (kind === 'starred' && !item.starred) return false;
        if ((kind === 'chat' || kind === 'search') && item.type !== kind) return false;
        return !words || label(item).toLowerCase().includes(words);
      })
      // Starred first; the server's order (newest first) within each group.
      .sort((a, b) => Number(b.starred) - Number(a.starred));
    const current = location.hash;
    clear(this.list, 
      shown.length
        ? shown.map((item) => this.renderItem(item, current))
        : h('li.empty-list', {}, this.items.length ? 'Nothing matches.' : 'No chats or searches yet.'),
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

export function label(item) {
  if (item.title && item.title.trim()) return item.title;
  if (item.type === 'search') return item.query || 'Untitled search';
  return 'New chat';
}
