// Server-sent events over fetch (the streams are POSTs, which EventSource cannot send), read by
// the contract's client rules: `data:` lines of one event joined with a newline, an event ends
// at a blank line, unknown names are the caller's to ignore. `follow` keeps a run's stream
// going across a dropped connection by attaching again with `Last-Event-ID`.

import { ApiError, openStream } from './api.js';

/** Yields `{ event, data, id }` from an event-stream response; `data` is parsed JSON. */
export async function* parse(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let event = 'message';
  let data = [];
  let id = null;
  // A \r that ended one read ended its line; a \n starting the next read is the same line end.
  let endedWithCR = false;
  try {
    for (;;) {
      let { value, done } = await reader.read();
      if (done) return;
      if (endedWithCR && value.startsWith('\n')) value = value.slice(1);
      endedWithCR = value.endsWith('\r');
      buffer += value;
      const lines = buffer.split(/\r\n|\r|\n/);
      // The last piece is a line still arriving (empty when the read ended at a line end).
      buffer = lines.pop();
      for (const line of lines) {
        if (line === '') {
          if (data.length) {
            let parsed;
            try {
              parsed = JSON.parse(data.join('\n'));
            } catch {
              parsed = null;
            }
            if (parsed !== null) yield { event, data: parsed, id };
          }
          event = 'message';
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        let text = colon === -1 ? '' : line.slice(colon + 1);
        if (text.startsWith(' ')) text = text.slice(1);
        if (field === 'event') event = text;
        else if (field === 'data') data.push(text);
        else if (field === 'id') id = text;
      }
    }
  } finally {
    reader.releaseLock();
  }
}

const TERMINAL = new Set(['done', 'error']);
const RETRY_DELAYS_MS = [300, 1000, 2000, 4000];

/**
 * Reads a run's events to its end. `open()` gives the first response (a stream or an attach);
 * when the connection drops before a terminal event, `attachPath` is asked again with the last
 * event id seen, so nothing is shown twice or lost. Resolves with the terminal event, or with
 * `{ event: 'gone' }` when the run ended while the page was away (attach answered 404: the
 * stored state is the answer). Rejects with the ApiError of a refused first request.
 */
export async function follow({ open, attachPath, onEvent, signal }) {
  let lastId = null;
  let response = await open();
  for (let attempt = 0; ; ) {
    try {
      for await (const item of parse(response)) {
        if (item.id) lastId = item.id;
        attempt = 0;
        onEvent(item);
        if (TERMINAL.has(item.event)) return item;
      }
    } catch (err) {
      if (signal?.aborted) throw err;
      // A dropped connection: attach again below.
    }
    if (signal?.aborted) throw new DOMException('aborted', 'AbortError');
    if (attempt >= RETRY_DELAYS_MS.length) {
      throw new ApiError(0, 'the connection to the server was lost');
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_DELAYS_MS[attempt]));
    attempt += 1;
    try {
      response = await openStream(attachPath, undefined, { signal, lastEventId: lastId });
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return { event: 'gone' };
      if (err instanceof ApiError && err.status === 0) {
        response = { body: new ReadableStream({ start: (c) => c.close() }) };
        continue;
      }
      throw err;
    }
  }
}
