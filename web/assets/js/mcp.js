// The MCP servers page (`#/mcp-servers`): each declared server with its state, and for one that
// needs a login a Connect button (the server begins the login and answers where to send the
// browser; the login comes back to the server, then here) and a Disconnect button. A server
// every person shares is connected by an admin (its buttons are an admin's); one declared
// `per_user` is connected by each person with their own account, and its state is theirs.
// What a server says (its name is the operator's; its reason is chatd's words) is shown as text.

import * as api from './api.js';
import { clear, h, toast } from './dom.js';

const STATES = {
  connected: 'Connected',
  needs_login: 'Needs login',
  refused: 'Refused',
  unreachable: 'Unreachable',
  connecting: 'Connecting',
};

export function mountMcp(container, app, session) {
  // The built-in admin (ADMIN_TOKEN, open mode) or a person whose role is admin.
  const admin = session.mode !== 'token' || !session.user || session.user.role === 'admin';
  app.setTitle('MCP servers');
  const list = h('ul.mcp-servers', { id: 'mcp-servers', 'aria-label': 'MCP servers' });
  const page = h(
    'section.mcp-page',
    {},
    h('p', {}, 'The MCP servers of the configuration file. A server that needs a login is connected here; its tools then join the chat tools. A server marked "your own account" is connected by each person, and its tools are only theirs.'),
    list,
  );
  clear(container, page);
  let gone = false;

  async function act(button, method, path, after) {
    button.disabled = true;
    try {
      const answer = await api.request(method, path);
      after(answer);
    } catch (err) {
      toast(err.message, 'error');
      button.disabled = false;
    }
  }

  function row(server) {
    const buttons = [];
    const base = `v1/mcp-servers/${encodeURIComponent(server.name)}`;
    // A person's own login, or the one every person's calls use.
    const [begin, end] = server.perUser
      ? [['POST', `${base}/login`], ['DELETE', `${base}/login`]]
      : [['POST', `${base}/connect`], ['POST', `${base}/disconnect`]];
    if (server.login && (server.perUser || admin)) {
      const connect = h('button.primary', { type: 'button', dataset: { action: 'connect' } }, server.state === 'connected' ? 'Log in again' : 'Connect');
      connect.addEventListener('click', () =>
        act(connect, ...begin, (answer) => {
          const target = new URL(answer.authorizationUrl);
          if (target.protocol !== 'https:' && target.protocol !== 'http:') throw new Error('not a web address');
          location.assign(target.href);
        }),
      );
      buttons.push(connect);
      if (server.state !== 'needs_login') {
        const disconnect = h('button', { type: 'button', dataset: { action: 'disconnect' } }, 'Disconnect');
        disconnect.addEventListener('click', () =>
          act(disconnect, ...end, () => {
            toast(`${server.name}: disconnected`);
            load();
          }),
        );
        buttons.push(disconnect);
      }
    }
    return h(
      'li.mcp-server',
      { dataset: { name: server.name, state: server.state } },
      h(
        'div.mcp-server-head',
        {},
        h('strong', {}, server.name),
        ' ',
        h('span.mcp-state', {}, STATES[server.state] ?? server.state),
        server.perUser ? h('span.mcp-own', {}, ' · your own account') : null,
      ),
      h('div.mcp-server-url', {}, server.url),
      server.state === 'connected' ? h('div', {}, `${server.tools} tools`) : null,
      server.reason ? h('div.mcp-reason', {}, server.reason) : null,
      buttons.length ? h('div.mcp-actions', {}, buttons) : null,
    );
  }

  async function load() {
    try {
      const { data } = await api.get('v1/mcp-servers');
      if (gone) return;
      clear(list, data.length ? data.map(row) : h('li.empty', {}, 'No MCP server is declared ([mcp.NAME] in the configuration file).'));
      list.dataset.loaded = 'true';
      // A server still connecting (a login just finished, its tools being listed): look again.
      if (data.some((s) => s.state === 'connecting')) setTimeout(() => gone || load(), 1000);
    } catch (err) {
      if (!gone) toast(`The MCP servers could not be listed: ${err.message}`, 'error');
    }
  }

  load();
  return {
    unmount() {
      gone = true;
    },
  };
}
