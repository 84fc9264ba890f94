// Token mode: which mode the server is in, and the sign-in prompt. The token is asked for in a
// password field, checked against `GET /v1/auth/session` before it is kept, and kept only for
// this tab's session (sessionStorage). A login link (`chatd users login-link NAME`) opens the
// page with `#login=SECRET`: the secret is taken out of the address at once and posted, and the
// server answers with a session cookie (HttpOnly: this page never sees it), which then goes with
// every request the page makes.

import * as api from './api.js';
import { h } from './dom.js';

/**
 * Resolves with the session (`{ authenticated, mode }`) once the page may use the API: at once
 * in open mode or with a kept token that still works, else after the user signed in.
 */
export async function ensureSession(reason) {
  const link = takeLoginLink();
  let linkRefused = null;
  if (link) {
    try {
      await api.post('v1/auth/link', { token: link }, { withToken: null });
      api.setToken(null);
      reason = null;
    } catch (err) {
      linkRefused = `That login link did not work: ${err.message}`;
    }
  }
  if (!reason) {
    try {
      return await api.get('v1/auth/session', { withToken: api.token() });
    } catch (err) {
      if (!(err instanceof api.ApiError) || err.status !== 401) throw err;
      reason = linkRefused ?? (api.token() ? 'The saved token was refused. Sign in again.' : null);
    }
  }
  api.setToken(null);
  return signIn(reason);
}

/** The login link's secret in the address (`#login=…`), removed from it (and from history). */
function takeLoginLink() {
  const params = new URLSearchParams(location.hash.slice(1));
  const link = params.get('login');
  if (link) history.replaceState(null, '', location.pathname + location.search);
  return link;
}

function signIn(reason) {
  return new Promise((resolve) => {
    const input = h('input', {
      type: 'password',
      id: 'token',
      name: 'token',
      autocomplete: 'current-password',
      required: true,
      'aria-describedby': 'signin-message',
    });
    const message = h('p.signin-message', { id: 'signin-message', role: 'alert' }, reason || '');
    const button = h('button.primary', { type: 'submit' }, 'Sign in');
    const form = h(
      'form.signin',
      {
        onsubmit: async (event) => {
          event.preventDefault();
          const value = input.value.trim();
          if (!value) return;
          button.disabled = true;
          message.textContent = '';
          try {
            const session = await api.get('v1/auth/session', { withToken: value });
            api.setToken(value);
            overlay.remove();
            page?.removeAttribute('inert');
            resolve(session);
          } catch (err) {
            message.textContent =
              err instanceof api.ApiError && err.status === 401
                ? 'That token was refused (401). Check ADMIN_TOKEN and try again.'
                : `Could not sign in: ${err.message}`;
            input.select();
          } finally {
            button.disabled = false;
          }
        },
      },
      h('h1', {}, 'Sign in to chatd'),
      h('p', {}, 'This server needs an access token (ADMIN_TOKEN, or one of your keys). It is kept for this browser tab only. People without one sign in with a login link (chatd users login-link NAME).'),
      h('label', { for: 'token' }, 'Access token'),
      input,
      message,
      button,
    );
    // With an identity provider (`[auth.oidc]`), people sign in there: the server's start
    // route sends this page to it, and its answer comes back signed in.
    api
      .get('v1/auth/methods', { withToken: null })
      .then((methods) => {
        if (!methods.oidc) return;
        const link = h('a.button.signin-provider', { href: 'v1/auth/oidc/start', id: 'oidc-signin' }, 'Sign in with your identity provider');
        form.querySelector('h1').after(link);
      })
      .catch(() => {});
    const overlay = h('div.overlay', { role: 'dialog', 'aria-modal': 'true', 'aria-labelledby': 'signin-title' }, form);
    form.querySelector('h1').id = 'signin-title';
    // The page behind the prompt is out of reach (focus, clicks, screen readers) until then.
    const page = document.querySelector('.app');
    page?.setAttribute('inert', '');
    document.body.append(overlay);
    input.focus();
  });
}
