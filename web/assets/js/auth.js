// Token mode: which mode the server is in, and the sign-in prompt. The token is asked for in a
// password field, checked against `GET /v1/auth/session` before it is kept, and kept only for
// this tab's session (sessionStorage).

import * as api from './api.js';
import { h } from './dom.js';

/**
 * Resolves with the session (`{ authenticated, mode }`) once the page may use the API: at once
 * in open mode or with a kept token that still works, else after the user signed in.
 */
export async function ensureSession(reason) {
  if (!reason) {
    try {
      return await api.get('v1/auth/session', { withToken: api.token() });
    } catch (err) {
      if (!(err instanceof api.ApiError) || err.status !== 401) throw err;
      reason = api.token() ? 'The saved token was refused. Sign in again.' : null;
    }
  }
  api.setToken(null);
  return signIn(reason);
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
      h('p', {}, 'This server needs its access token (ADMIN_TOKEN). It is kept for this browser tab only.'),
      h('label', { for: 'token' }, 'Access token'),
      input,
      message,
      button,
    );
    const overlay = h('div.overlay', { role: 'dialog', 'aria-modal': 'true', 'aria-labelledby': 'signin-title' }, form);
    form.querySelector('h1').id = 'signin-title';
    // The page behind the prompt is out of reach (focus, clicks, screen readers) until then.
    const page = document.querySelector('.app');
    page?.setAttribute('inert', '');
    document.body.append(overlay);
    input.focus();
  });
}
