// The Files page (`#/files`): the person's library (docs/files.md). Files are added with their
// progress shown (XMLHttpRequest: fetch reports no upload progress), each with its status
// (processing, ready with its pages and chunks, failed with the reason), a download and a
// Delete. While a file is processing the list is asked again every second. Names, collections
// and reasons are shown as text. `openFile` opens a file's original for the citations of a
// `file_search` card (toolcards.js).

import * as api from './api.js';
import { clear, formatBytes, formatTime, h, toast } from './dom.js';

/** What the file picker offers: the formats the library reads. */
const ACCEPT = '.pdf,.docx,.xlsx,.csv,.html,.htm,.md,.markdown,.txt,.text';

const STATUS = { processing: 'Processing', ready: 'Ready', failed: 'Failed' };

/** The path of a file's original. */
export function contentPath(id) {
  return `v1/files/${encodeURIComponent(String(id))}/content`;
}

/** Downloads file `id`'s original as `name`: with the tab's token when it has one (a plain link
 * carries none), else the route itself (the session's cookie). */
export async function openFile(id, name) {
  const path = contentPath(id);
  let href = api.url(path);
  if (api.token()) {
    try {
      const response = await fetch(href, { headers: { Authorization: `Bearer ${api.token()}` } });
      if (!response.ok) {
        toast(`${name}: ${response.status === 404 ? 'not in your files any more' : response.statusText}`, 'error');
        return;
      }
      href = URL.createObjectURL(await response.blob());
      setTimeout(() => URL.revokeObjectURL(href), 60_000);
    } catch {
      toast(`${name}: the server could not be reached`, 'error');
      return;
    }
  }
  h('a', { href, download: String(name).split('/').pop() }).click();
}

/** Sends `file` (with `collection`) to POST /v1/files, reporting progress (0..1): the file as
 * added, or an error with the server's message. */
function upload(file, collection, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', api.url('v1/files'));
    if (api.token()) xhr.setRequestHeader('Authorization', `Bearer ${api.token()}`);
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress(event.loaded / event.total);
    };
    xhr.onload = () => {
      let body = null;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        // Not JSON (a proxy's page): the status says enough.
      }
      if (xhr.status === 200 || xhr.status === 201) resolve(body);
      else reject(new Error(body && typeof body.message === 'string' ? body.message : `${xhr.status} ${xhr.statusText}`));
    };
    xhr.onerror = () => reject(new Error('the server could not be reached'));
    const form = new FormData();
    form.append('file', file, file.name);
    if (collection) form.append('collection', collection);
    xhr.send(form);
  });
}

export function mountFiles(container, app) {
  app.setTitle('Files');
  const input = h('input', { type: 'file', id: 'files-input', multiple: true, accept: ACCEPT, 'aria-label': 'Files to add' });
  const collection = h('input', { type: 'text', id: 'files-collection', maxlength: 200, placeholder: 'Collection (optional)', 'aria-label': 'Collection (optional)' });
  const add = h('button.primary', { type: 'submit', id: 'files-add' }, 'Add');
  const progress = h('progress', { id: 'files-progress', max: 1, value: 0, hidden: true, 'aria-label': 'Upload progress' });
  const form = h('form.files-upload', {}, input, collection, add, progress);
  const list = h('ul.files', { id: 'files', 'aria-label': 'Files' });
  const page = h(
    'section.files-page',
    {},
    h('p', {}, 'Your documents: PDF, DOCX, XLSX, CSV, HTML, Markdown or text, up to 25 MiB each. The file_search tool finds passages in them for your chats; no one else sees them.'),
    form,
    list,
  );
  clear(container, page);
  let gone = false;
  let timer = null;

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const files = [...input.files];
    if (!files.length) {
      toast('Choose a file first', 'error');
      return;
    }
    add.disabled = true;
    progress.hidden = false;
    for (const [i, file] of files.entries()) {
      try {
        const added = await upload(file, collection.value.trim(), (done) => {
          progress.value = (i + done) / files.length;
        });
        if (added && added.name !== file.name) toast(`${file.name}: the same file is already here as ${added.name}`);
      } catch (err) {
        toast(`${file.name}: ${err.message}`, 'error');
      }
    }
    progress.hidden = true;
    progress.value = 0;
    add.disabled = false;
    input.value = '';
    if (!gone) load();
  });

  function row(file) {
    const facts = [formatBytes(file.sizeBytes), formatTime(file.createdAt)];
    if (file.status === 'ready') {
      if (typeof file.pages === 'number') facts.push(`${file.pages} pages`);
      facts.push(`${file.chunks} chunks`);
    }
    const download = h('button', { type: 'button', dataset: { action: 'download' } }, 'Download');
    download.addEventListener('click', () => openFile(file.id, file.name));
    const remove = h('button', { type: 'button', dataset: { action: 'delete' } }, 'Delete');
    remove.addEventListener('click', async () => {
      remove.disabled = true;
      try {
        await api.request('DELETE', `v1/files/${encodeURIComponent(file.id)}`);
        toast(`${file.name}: deleted`);
        load();
      } catch (err) {
        toast(err.message, 'error');
        remove.disabled = false;
      }
    });
    return h(
      'li.file',
      { dataset: { id: file.id, status: file.status } },
      h(
        'div.file-head',
        {},
        h('strong', {}, file.name),
        ' ',
        h('span.file-status', {}, STATUS[file.status] ?? file.status),
        file.collection ? h('span.file-collection', {}, ` · ${file.collection}`) : null,
      ),
      h('div.file-facts', {}, facts.filter(Boolean).join(' · ')),
      file.error ? h('div.file-error', {}, file.error) : null,
      h('div.file-actions', {}, download, remove),
    );
  }

  async function load() {
    clearTimeout(timer);
    try {
      const { files } = await api.get('v1/files');
      if (gone) return;
      clear(list, files.length ? files.map(row) : h('li.empty', {}, 'No files yet.'));
      list.dataset.loaded = 'true';
      if (files.some((f) => f.status === 'processing')) timer = setTimeout(() => gone || load(), 1000);
    } catch (err) {
      if (!gone) toast(`Your files could not be listed: ${err.message}`, 'error');
    }
  }

  load();
  return {
    unmount() {
      gone = true;
      clearTimeout(timer);
    },
  };
}
