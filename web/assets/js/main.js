// The page's entry: signs in when the server is in token mode, then routes. The open chat or
// search lives in the URL's fragment (`#/chat/<id>`, `#/search/<id>`, `#/search` for a new
// search, `#/` for a new chat, `#/mcp-servers` for the MCP servers, `#/account` for keys, usage
// and people), so reload, back and a shared link return to it, and the server needs no route
// per view.

import * as api from './api.js';
import { ensureSession } from './auth.js';
import { mountChat } from './chat.js';
import { toast } from './dom.js';
import { mountMcp } from './mcp.js';
import { mountAccount } from './account.js';
import { mountFiles } from './files.js';
import { mountSearch } from './search.js';
import { commandOf, showHelp } from './shortcuts.js';
import { Sidebar } from './sidebar.js';

let view = null;
let viewKey = null;
let cachedModels = null;
let cachedTools = null;
let signingIn = null;
let refreshTimer = 0;
let forkToRun = null; // a fork just made, whose reply runs when its view opens
let session = { mode: 'open' }; // `GET /v1/auth/session`'s answer, once signed in

const app = {
  models() {
    cachedModels ??= api.get('v1/models').catch((err) => {
      cachedModels = null;
      throw err;
    });
    return cachedModels;
  },
  tools() {
    cachedTools ??= api
      .get('v1/chat-tools')
      .then((r) => r.tools)
      .catch((err) => {
        cachedTools = null;
        throw err;
      });
    return cachedTools;
  },
  setTitle(text) {
    document.getElementById('view-title').textContent = text;
    document.title = text ? `${text} · chatd` : 'chatd';
  },
  /** The view now shows what `hash` names (a chat just created): the URL follows, no remount. */
  adopt(hash) {
    history.replaceState(null, '', hash);
    viewKey = keyOf(hash);
    sidebar.render();
  },
  navigate(hash) {
    if (location.hash === hash) route();
    else location.hash = hash;
  },
  refreshWorkspace() {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(() => sidebar.refresh(), 50);
  },
  /** The provider and model of the chat used last, if any. */
  recentModel() {
    const chat = sidebar.loaded.chat.find((i) => i.lastUsedProvider && i.lastUsedModel);
    return chat ? { provider: chat.lastUsedProvider, model: chat.lastUsedModel } : null;
  },
  markRunning(type, id, running) {
    sidebar.markRunning(type, id, running);
  },
  /** Opens the chat a fork just made; its view runs the reply (`takeFork`). */
  openFork(chatId) {
    forkToRun = chatId;
    this.navigate(`#/chat/${encodeURIComponent(chatId)}`);
  },
  takeFork(chatId) {
    const mine = forkToRun === chatId;
    if (mine) forkToRun = null;
    return mine;
  },
};

const sidebar = new Sidebar(app);

function parse(hash) {
  if (hash === '#/mcp-servers') return { type: 'mcp', id: null };
  if (hash === '#/account') return { type: 'account', id: null };
  if (hash === '#/files') return { type: 'files', id: null };
  const m = /^#\/(chat|search)(?:\/([^/?#]+))?$/.exec(hash);
  if (!m) return { type: 'chat', id: null };
  let id = null;
  try {
    id = m[2] ? decodeURIComponent(m[2]) : null;
  } catch {
    id = m[2]; // not valid percent-encoding: asked for as it is, and not found
  }
  return { type: m[1], id };
}

function keyOf(hash) {
  const { type, id } = parse(hash);
  return `${type}:${id ?? ''}`;
}

function route() {
  const target = parse(location.hash);
  const key = keyOf(location.hash);
  if (view && key === viewKey) return;
  // A fork's reply runs when its view opens, not later, when the user comes back to it.
  if (target.id !== forkToRun) forkToRun = null;
  view?.unmount();
  viewKey = key;
  const container = document.getElementById('view');
  if (target.type === 'mcp') {
    cachedTools = null; // a login just finished may have brought tools
    view = mountMcp(container, app, session);
  } else if (target.type === 'account' && session.mode === 'token') view = mountAccount(container, app, session);
  else if (target.type === 'files') view = mountFiles(container, app);
  else if (target.type === 'search') view = mountSearch(container, app, target.id);
  else view = mountChat(container, app, target.id);
  sidebar.render();
  closeDrawer();
  document.getElementById('main').scrollTo?.(0, 0);
}

function openDrawer() {
  document.body.classList.add('drawer-open');
  document.getElementById('scrim').hidden = false;
  document.getElementById('filter-text').focus();
}

function closeDrawer() {
  const wasOpen = document.body.classList.contains('drawer-open');
  document.body.classList.remove('drawer-open');
  document.getElementById('scrim').hidden = true;
  // Focus back where the drawer was opened from, unless it went to the new view.
  if (wasOpen && document.getElementById('sidebar').contains(document.activeElement)) {
    document.getElementById('open-sidebar').focus();
  }
}

/** The page's keys: Escape closes what is open first; then the shortcuts (`shortcuts.js`). */
function onKey(e) {
  if (document.querySelector('dialog[open], .overlay')) return; // a dialog handles its own keys
  const command = commandOf(e);
  if (!command || e.isComposing) return;
  if (command === 'stop' && !escapeStops(e)) return;
  e.preventDefault();
  if (command === 'help') showHelp();
  else if (command === 'new-chat') app.navigate('#/');
  else if (command === 'find') {
    if (window.matchMedia('(max-width: 760px)').matches) openDrawer();
    document.getElementById('filter-text').focus();
  } else if (!view?.command?.(command) && command !== 'stop') {
    toast(command === 'focus-composer' ? 'There is no message box here.' : 'Nothing to do that with here.');
  }
}

/**
 * Whether an Escape is the page's "stop the reply": not when it closes the drawer or a menu,
 * and not in a field of its own (the filter box clears, a rename is cancelled); in the
 * message box it is.
 */
function escapeStops(e) {
  const menus = document.querySelectorAll('details.item-menu[open]');
  if (document.body.classList.contains('drawer-open') || menus.length) {
    closeDrawer();
    for (const menu of menus) menu.open = false;
    return false;
  }
  const field = e.target instanceof Element && e.target.closest('input, textarea, select, [contenteditable]');
  return !field || e.target.id === 'message';
}

async function signIn(reason) {
  signingIn ??= ensureSession(reason).finally(() => {
    signingIn = null;
  });
  return signingIn;
}

function showMode(answer) {
  session = answer;
  const mode = document.getElementById('mode');
  if (session.mode !== 'token') mode.textContent = 'Open mode (no token)';
  else if (session.user) mode.textContent = `Signed in as ${session.user.name}`;
  else mode.textContent = 'Signed in with a token';
  document.getElementById('sign-out').hidden = session.mode !== 'token';
  document.getElementById('open-account').hidden = session.mode !== 'token';
}

/** Forgets the tab's token, or ends the session its cookie carries (on every instance). */
async function signOut() {
  if (api.token()) api.setToken(null);
  else await api.post('v1/auth/logout', undefined, { withToken: null }).catch(() => {});
  location.reload();
}

async function boot() {
  document.getElementById('open-sidebar').addEventListener('click', openDrawer);
  document.getElementById('close-sidebar').addEventListener('click', closeDrawer);
  document.getElementById('scrim').addEventListener('click', closeDrawer);
  document.getElementById('open-help').addEventListener('click', showHelp);
  document.addEventListener('keydown', onKey);
  document.getElementById('sign-out').addEventListener('click', signOut);
  // A login link opened in this tab, even at the prompt: the page starts again and uses it.
  window.addEventListener('hashchange', () => {
    if (location.hash.startsWith('#login=')) location.reload();
  });
  api.setUnauthorizedHandler(async () => {
    if (signingIn) return;
    const session = await signIn('The server refused the token (401). Sign in again.');
    showMode(session);
    cachedModels = null;
    cachedTools = null;
    viewKey = null;
    route();
    sidebar.refresh();
  });

  let session;
  try {
    session = await signIn();
  } catch (err) {
    toast(`The server could not be reached: ${err.message}`, 'error');
    return;
  }
  showMode(session);
  window.addEventListener('hashchange', route);
  window.addEventListener('focus', () => sidebar.refresh());
  // The list first: a new chat's default model is the one used last.
  await sidebar.refresh();
  route();
  document.body.dataset.ready = 'true';
}

boot();
