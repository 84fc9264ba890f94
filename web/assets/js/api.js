// The API client: every call of the page goes through here. Paths are relative to the page
// (`v1/chats`), so the page works at the server root and, unchanged, under `/api/` behind a
// proxy. In token mode the token lives in sessionStorage (this browser tab's session) and goes
// as `Authorization: Bearer`; a 401 anywhere sends the page back to the sign-in prompt.

const TOKEN_KEY = 'chatd.token';

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

let onUnauthorized = () => {};

/** What to do when a request is refused with 401 (the page shows its sign-in prompt). */
export function setUnauthorizedHandler(handler) {
  onUnauthorized = handler;
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

export function url(path) {
  return new URL(path, document.baseURI).href;
}

function headers(extra = {}, withToken = token()) {
  const all = { ...extra };
  if (withToken) all.Authorization = `Bearer ${withToken}`;
  return all;
}

async function errorOf(response) {
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    if (body && typeof body.message === 'string') message = body.message;
  } catch {
    // Not JSON (a proxy's page): the status line says enough.
  }
  return new ApiError(response.status, message);
}

/**
 * One JSON request. Rejects with ApiError (status and the server's message); a network failure
 * is an ApiError with status 0.
 */
export async function request(method, path, body, { signal, withToken } = {}) {
  const init = { method, headers: headers({}, withToken === undefined ? token() : withToken), signal };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url(path), init);
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    throw new ApiError(0, 'the server could not be reached');
  }
  if (!response.ok) {
    const error = await errorOf(response);
    if (response.status === 401 && withToken === undefined) onUnauthorized(error);
    throw error;
  }
  if (response.status === 204) return null;
  return response.json();
}

export const get = (path, opts) => request('GET', path, undefined, opts);
export const post = (path, body, opts) => request('POST', path, body, opts);
export const patch = (path, body, opts) => request('PATCH', path, body, opts);
export const del = (path, opts) => request('DELETE', path, undefined, opts);

/**
 * Opens an SSE response (a POST: streams and attaches). Resolves with the Response once its
 * head arrived and was a success; rejects with ApiError otherwise.
 */
export async function openStream(path, body, { signal, lastEventId } = {}) {
  const extra = { Accept: 'text/event-stream' };
  if (body !== undefined) extra['Content-Type'] = 'application/json';
  if (lastEventId) extra['Last-Event-ID'] = lastEventId;
  let response;
  try {
    response = await fetch(url(path), {
      method: 'POST',
      headers: headers(extra),
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    throw new ApiError(0, 'the server could not be reached');
  }
  if (!response.ok) {
    const error = await errorOf(response);
    if (response.status === 401) onUnauthorized(error);
    throw error;
  }
  return response;
}
