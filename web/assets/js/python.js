// The `python` tool's card body: the code highlighted, then, once the call ended, what it
// printed (stdout, stderr), the repr of its value, its error (a traceback), and the files it
// wrote. The result is the tool message's content (JSON, docs/python.md); everything in it is
// the code's output, so untrusted: text nodes only. Images (PNG, JPEG, SVG) are shown through
// <img> from GET /v1/chats/:chatId/files/:fileId, as data: URLs fetched with the token in token
// mode (the page's CSP allows `img-src 'self' data:`); an <img> never runs an SVG's scripts.
// Other files are download links.

import * as api from './api.js';
import { formatBytes, h } from './dom.js';
import { codeElement } from './markdown.js';

const IMAGES = new Set(['image/png', 'image/jpeg', 'image/svg+xml']);

/** The parts of a python call's card after its header. */
export function pythonParts(call) {
  const parts = [h('div.python-code', {}, codeElement('python', call.args.code))];
  const result = parse(call.content);
  if (result) {
    for (const [key, label] of [
      ['stdout', 'Output'],
      ['stderr', 'Errors'],
    ]) {
      if (typeof result[key] === 'string' && result[key]) {
        const cut = result[`${key}Truncated`] ? ` (cut: ${result[`${key}DroppedChars`]} more characters)` : '';
        parts.push(h(`section.python-${key}`, {}, h('h4', {}, label + cut), h('pre', {}, result[key])));
      }
    }
    if (typeof result.value === 'string') {
      parts.push(h('section.python-value', {}, h('h4', {}, 'Value'), h('pre', {}, result.value)));
    }
  } else if (typeof call.resultPreview === 'string' && call.resultPreview) {
    parts.push(h('details.tool-result', {}, h('summary', {}, 'Result preview'), h('pre', {}, call.resultPreview)));
  }
  if (call.error) parts.push(h('pre.tool-error.python-error', {}, call.error));
  const files = Array.isArray(call.files) ? call.files : [];
  if (files.length && call.chatId) {
    parts.push(h('div.python-files', {}, files.map((file) => fileView(call.chatId, file))));
  }
  return parts;
}

function parse(content) {
  if (typeof content !== 'string') return null;
  try {
    const value = JSON.parse(content);
    return value && typeof value === 'object' && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

function fileUrl(chatId, file) {
  return `v1/chats/${encodeURIComponent(chatId)}/files/${encodeURIComponent(String(file.id))}`;
}

/** An image shown, or a link that downloads the file. */
function fileView(chatId, file) {
  const name = String(file.name || 'file');
  const size = typeof file.sizeBytes === 'number' ? ` (${formatBytes(file.sizeBytes)})` : '';
  const path = fileUrl(chatId, file);
  if (IMAGES.has(file.mimeType)) {
    const img = h('img.python-image', { alt: name, loading: 'lazy' });
    show(img, path);
    return h('figure.python-file', {}, img, h('figcaption', {}, name + size));
  }
  const link = h('a.python-download', { href: api.url(path), download: name.split('/').pop() }, name + size);
  if (api.token()) {
    // A plain link carries no token: fetch it with one and save what came.
    link.addEventListener('click', async (event) => {
      event.preventDefault();
      const blob = await fetchFile(path);
      if (!blob) return;
      const href = URL.createObjectURL(blob);
      const save = h('a', { href, download: link.download });
      save.click();
      setTimeout(() => URL.revokeObjectURL(href), 60_000);
    });
  }
  return h('p.python-file', {}, link);
}

/** Sets the image's source: the route itself in open mode, a data: URL fetched with the token
 * otherwise. */
async function show(img, path) {
  if (!api.token()) {
    img.src = api.url(path);
    return;
  }
  const blob = await fetchFile(path);
  if (!blob) return;
  const reader = new FileReader();
  reader.onload = () => {
    img.src = reader.result;
  };
  reader.readAsDataURL(blob);
}

async function fetchFile(path) {
  try {
    const response = await fetch(api.url(path), { headers: { Authorization: `Bearer ${api.token()}` } });
    return response.ok ? await response.blob() : null;
  } catch {
    return null;
  }
}
