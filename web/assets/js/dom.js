// Building the DOM from data. Every string becomes a text node or an attribute value, never
// markup: the page is served with `require-trusted-types-for 'script'`, so an innerHTML
// assignment would throw anyway. Nothing in this client parses HTML.

/** h('button.primary', {onclick, type: 'button'}, 'Send') */
export function h(spec, attrs = {}, ...children) {
  const [tag, ...classes] = spec.split('.');
  const el = document.createElement(tag || 'div');
  if (classes.length) el.className = classes.join(' ');
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on')) {
      // Handlers are functions only: a string here would be inline script.
      if (typeof value !== 'function') throw new TypeError(`h(): ${key} must be a function`);
      el.addEventListener(key.slice(2), value);
    } else if (key === 'dataset') {
      Object.assign(el.dataset, value);
    } else if (key === 'value' || key === 'checked' || key === 'disabled' || key === 'selected') {
      el[key] = value;
    } else {
      el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

/** Appends strings (as text) and nodes, flattening arrays and skipping null. */
export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Empties `el`, then appends `children` as `append` does. */
export function clear(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** A link to an http(s) URL, or null: no other scheme ever becomes an href. */
export function safeHref(url) {
  if (typeof url !== 'string') return null;
  try {
    const parsed = new URL(url.trim());
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.href : null;
  } catch {
    return null;
  }
}

/** An external link opened in a new tab without handing it this page. */
export function externalLink(url, ...children) {
  const href = safeHref(url);
  if (!href) return h('span', {}, ...children);
  return h('a', { href, target: '_blank', rel: 'noopener noreferrer nofollow' }, ...children);
}

export function formatTime(iso) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  const now = new Date();
  const sameDay = date.toDateString() === now.toDateString();
  return sameDay
    ? date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
    : date.toLocaleDateString([], { month: 'short', day: 'numeric' });
}

export function formatBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** The pulsing dots of something being written, announced as `label`. */
export function typingDots(label, extraClass = '') {
  return h(`div.typing${extraClass ? `.${extraClass}` : ''}`, { role: 'status', 'aria-label': label }, h('span'), h('span'), h('span'));
}

/** A small notice in the status region (announced to screen readers). */
export function toast(message, kind = 'info') {
  const region = document.getElementById('toasts');
  if (!region) return;
  const item = h(`div.toast.${kind}`, { role: kind === 'error' ? 'alert' : 'status' }, message);
  region.append(item);
  setTimeout(() => item.remove(), 6000);
}

/** Says `message` to screen readers through the page's polite live region (`#announcer`). */
export function announce(message) {
  const region = document.getElementById('announcer');
  if (!region) return;
  // Emptied first, so the same words said twice are announced twice.
  region.textContent = '';
  setTimeout(() => {
    region.textContent = message;
  }, 50);
}

/** Puts `text` on the clipboard and says so; `what` names it ("Reply", "Code"). */
export async function copyText(text, what) {
  try {
    await navigator.clipboard.writeText(text);
    announce(`${what} copied`);
    toast(`${what} copied`);
    return true;
  } catch (err) {
    toast(`Could not copy: ${err.message}`, 'error');
    return false;
  }
}
