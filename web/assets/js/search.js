// The search view: a query is looked up with `reuseByQuery` (a fresh cached answer is shown at
// once), else run as a stream: results as they arrive, then the answer with its citations
// linked to the results they came from. A search still running when the page opens (a reload,
// another tab) is attached to. "Continue as chat" starts a chat seeded with the search.

import * as api from './api.js';
import { clear, externalLink, formatTime, h, safeHref, typingDots } from './dom.js';
import { renderMarkdown } from './markdown.js';
import { follow } from './sse.js';

export function mountSearch(container, app, searchId) {
  const view = new SearchView(container, app, searchId);
  view.start();
  return view;
}

class SearchView {
  constructor(container, app, searchId) {
    this.container = container;
    this.app = app;
    this.searchId = searchId;
    this.search = null;
    this.running = false;
    this.abort = new AbortController();
    this.build();
  }

  unmount() {
    this.abort.abort();
  }

  build() {
    this.queryInput = h('input', {
      type: 'search',
      id: 'query',
      name: 'query',
      placeholder: 'Search the web',
      'aria-label': 'Search query',
      required: true,
      autocomplete: 'off',
    });
    this.typeSelect = h(
      'select',
      { id: 'search-type', 'aria-label': 'Search type' },
      ['auto', 'fast', 'deep', 'instant'].map((t) => h('option', { value: t }, t)),
    );
    this.searchButton = h('button.primary', { type: 'submit', id: 'search-submit' }, 'Search');
    this.form = h(
      'form.search-form',
      { id: 'search-form', role: 'search', onsubmit: (e) => { e.preventDefault(); this.submit(); } },
      this.queryInput,
      this.typeSelect,
      this.searchButton,
    );
    this.status = h('p.search-status', { id: 'search-status', role: 'status' });
    this.actions = h('div.search-actions', { id: 'search-actions' });
    this.answer = h('section.answer', { id: 'answer', 'aria-label': 'Answer', hidden: true });
    this.results = h('section.results', { id: 'results', 'aria-label': 'Results', hidden: true });
    clear(this.container, 
      h('section.search', { 'aria-label': 'Search' }, this.form, this.status, this.actions, this.answer, this.results),
    );
  }

  async start() {
    this.app.setTitle('New search');
    if (!this.searchId) {
      this.queryInput.focus();
      return;
    }
    const signal = this.abort.signal;
    try {
      const { search } = await api.get(`v1/searches/${encodeURIComponent(this.searchId)}`, { signal });
      this.show(search);
      const runs = await api.get('v1/active-runs', { signal });
      if (runs.searches.includes(search.id)) {
        this.stream(`v1/searches/${encodeURIComponent(search.id)}/run/stream/attach`, undefined);
      } else if (!search.results.length && search.answerText === null && !search.error && !search.answerError) {
        this.status.textContent = 'This search has not been run yet.';
        this.renderActions();
      }
    } catch (err) {
      if (err.name === 'AbortError') return;
      if (err instanceof api.ApiError && err.status === 404) {
        clear(this.container, 
          h('div.empty', {}, h('p', {}, 'This search does not exist (it may have been deleted).'), h('a.button', { href: '#/search' }, 'New search')),
        );
        this.app.setTitle('Not found');
        return;
      }
      this.status.textContent = err.message;
    }
  }

  async submit() {
    const query = this.queryInput.value.trim();
    if (!query || this.running) return;
    const signal = this.abort.signal;
    this.searchButton.disabled = true;
    try {
      const { search, cacheHit } = await api.post('v1/searches', { query, reuseByQuery: true }, { signal });
      if (signal.aborted) return;
      this.searchId = search.id;
      this.app.adopt(`#/search/${encodeURIComponent(search.id)}`);
      this.app.refreshWorkspace();
      if (cacheHit) {
        const { search: detail } = await api.get(`v1/searches/${encodeURIComponent(search.id)}`, { signal });
        this.show(detail);
        this.status.textContent = `Answer from ${formatTime(detail.updatedAt)}, reused (less than a day old).`;
        return;
      }
      this.run();
    } catch (err) {
      if (err.name !== 'AbortError') this.status.textContent = `The search failed: ${err.message}`;
    } finally {
      if (!this.running) this.searchButton.disabled = false;
    }
  }

  run() {
    const body = { query: this.queryInput.value.trim() || undefined, type: this.typeSelect.value };
    this.stream(`v1/searches/${encodeURIComponent(this.searchId)}/run/stream`, body);
  }

  async stream(path, body) {
    this.running = true;
    this.searchButton.disabled = true;
    this.renderActions();
    this.status.textContent = 'Searching…';
    this.app.markRunning('search', this.searchId, true);
    this.renderAnswer({ pending: true });
    this.results.hidden = true;
    let outcome;
    try {
      outcome = await follow({
        open: () => api.openStream(path, body, { signal: this.abort.signal }),
        attachPath: `v1/searches/${encodeURIComponent(this.searchId)}/run/stream/attach`,
        signal: this.abort.signal,
        onEvent: ({ event, data }) => {
          if (event === 'search_results') {
            this.renderResults(data.results || []);
            this.status.textContent = 'Writing the answer…';
          } else if (event === 'search_error') {
            this.renderResults([], data.error);
          } else if (event === 'answer') {
            this.renderAnswer({ text: data.answerText, citations: data.answerCitations || [] });
          } else if (event === 'answer_error') {
            this.renderAnswer({ error: data.error });
          }
        },
      });
    } catch (err) {
      if (err.name !== 'AbortError') outcome = { event: 'error', data: { message: err.message } };
    } finally {
      this.running = false;
      this.searchButton.disabled = false;
    }
    // A view left mid-run stops reading; the search goes on on the server (and keeps its mark).
    if (this.abort.signal.aborted || !outcome) return;
    this.app.markRunning('search', this.searchId, false);
    if (outcome.event === 'done' && outcome.data.search) {
      this.show(outcome.data.search);
      this.status.textContent = '';
    } else if (outcome.event === 'gone') {
      const { search } = await api.get(`v1/searches/${encodeURIComponent(this.searchId)}`);
      this.show(search);
      this.status.textContent = '';
    } else {
      this.status.textContent = `The search failed: ${outcome.data?.message || 'unknown error'}`;
      if (this.answer.querySelector('.pending')) this.answer.hidden = true;
    }
    this.renderActions();
    this.app.refreshWorkspace();
  }

  /** A stored search, in full. */
  show(search) {
    this.search = search;
    this.queryInput.value = search.query || '';
    this.app.setTitle(search.title || search.query || 'Search');
    this.renderResults(search.results || [], search.error);
    if (search.answerText !== null || search.answerError) {
      this.renderAnswer({ text: search.answerText, citations: search.answerCitations || [], error: search.answerError });
    } else {
      this.answer.hidden = true;
    }
    this.renderActions();
  }

  renderActions() {
    const buttons = [];
    if (this.searchId && !this.running) {
      buttons.push(h('button', { type: 'button', id: 'run-again', onclick: () => this.run() }, this.search?.results?.length ? 'Search again' : 'Run search'));
    }
    if (this.search && !this.running && (this.search.results.length || this.search.answerText)) {
      buttons.push(h('button.primary', { type: 'button', id: 'continue-chat', onclick: () => this.continueAsChat() }, 'Continue as chat'));
    }
    clear(this.actions, buttons);
  }

  async continueAsChat() {
    try {
      const { chat } = await api.post(`v1/searches/${encodeURIComponent(this.search.id)}/chat`, {});
      this.app.refreshWorkspace();
      this.app.navigate(`#/chat/${encodeURIComponent(chat.id)}`);
    } catch (err) {
      this.status.textContent = `Could not start a chat: ${err.message}`;
    }
  }

  renderResults(results, error) {
    this.resultUrls = new Map();
    const items = results.map((r, k) => {
      const url = typeof r.url === 'string' ? r.url : '';
      if (safeHref(url)) this.resultUrls.set(safeHref(url), k);
      let host = '';
      try {
        host = new URL(url).hostname;
      } catch {
        host = '';
      }
      const snippet = r.summary || (Array.isArray(r.highlights) && r.highlights[0]) || r.snippet || r.content || (typeof r.text === 'string' ? r.text.slice(0, 300) : '');
      return h(
        'li.result',
        { id: `result-${k + 1}`, tabindex: '-1' },
        h('span.result-number', {}, `${k + 1}`),
        h(
          'div',
          {},
          h('h3', {}, externalLink(url, String(r.title || url || 'Untitled'))),
          h('p.result-meta', {}, host, r.publishedDate ? ` · ${String(r.publishedDate).slice(0, 10)}` : '', r.author ? ` · ${r.author}` : ''),
          snippet ? h('p.result-snippet', {}, String(snippet)) : null,
        ),
      );
    });
    clear(this.results, 
      h('h2', {}, 'Sources'),
      error ? h('p.error', { id: 'search-error' }, `Search failed: ${error}`) : null,
      items.length ? h('ol.result-list', {}, items) : error ? null : h('p', {}, 'No results.'),
    );
    this.results.hidden = false;
  }

  renderAnswer({ pending, text, citations = [], error }) {
    const parts = [h('h2', {}, 'Answer')];
    if (pending) parts.push(typingDots('Waiting for the answer', 'pending'));
    if (error) parts.push(h('p.error', { id: 'answer-error' }, `The answer failed: ${error}`));
    if (typeof text === 'string') parts.push(h('div.markdown', { id: 'answer-text' }, renderMarkdown(text)));
    if (citations.length) {
      parts.push(
        h('h3', {}, 'Citations'),
        h(
          'ol.citations',
          { id: 'citations' },
          citations.map((c) => {
            const href = safeHref(c.url);
            const at = href ? this.resultUrls?.get(href) : undefined;
            return h(
              'li.citation',
              {},
              externalLink(c.url, String(c.title || c.url || 'source')),
              at !== undefined
                ? h('button.cite', { type: 'button', 'aria-label': `Show result ${at + 1}`, onclick: () => this.showResult(at) }, `[${at + 1}]`)
                : null,
            );
          }),
        ),
      );
    }
    clear(this.answer, parts);
    this.answer.hidden = false;
  }

  showResult(index) {
    const el = document.getElementById(`result-${index + 1}`);
    if (!el) return;
    el.scrollIntoView({ behavior: 'smooth', block: 'center' });
    el.focus({ preventScroll: true });
    el.classList.add('flash');
    setTimeout(() => el.classList.remove('flash'), 1200);
  }
}
