// Attachments chosen in the composer, checked against the contract's limits before anything is
// uploaded: at most 8 per message, images PNG or JPEG up to 6 MB (judged by their first bytes,
// as the server does), text files up to 8 MB whose text is cut to 200,000 characters with
// `truncated: true`, and the whole request under the 32 MB body cap. "MB" is MiB, as on the
// server (host/src/attachments.rs).

const MIB = 1024 * 1024;
export const LIMITS = {
  perMessage: 8,
  imageBytes: 6 * MIB,
  textBytes: 8 * MIB,
  textChars: 200000,
  bodyBytes: 32 * MIB,
};

const TEXT_EXTENSIONS = new Set(
  'txt md markdown csv tsv json jsonl yaml yml toml xml html htm css js mjs ts tsx jsx py rs go java c h cc cpp hpp rb php sh bash zsh sql ini cfg conf log tex rst swift kt scala lua r pl diff patch env'.split(' '),
);

function extension(name) {
  const dot = name.lastIndexOf('.');
  return dot === -1 ? '' : name.slice(dot + 1).toLowerCase();
}

function isTextFile(file) {
  const type = (file.type || '').toLowerCase();
  return (
    type.startsWith('text/') ||
    /^application\/(json|xml|yaml|x-yaml|toml|javascript|x-sh|sql)/.test(type) ||
    TEXT_EXTENSIONS.has(extension(file.name))
  );
}

async function sniffImage(file) {
  const head = new Uint8Array(await file.slice(0, 8).arrayBuffer());
  const png = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
  if (png.every((b, k) => head[k] === b)) return 'image/png';
  if (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'image/jpeg';
  return null;
}

function readDataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

/** The first `max` characters (code points, as the server counts them) of `text`. */
export function cutToChars(text, max) {
  let count = 0;
  for (let k = 0; k < text.length; k += 1) {
    if (count === max) return { text: text.slice(0, k), truncated: true };
    const code = text.charCodeAt(k);
    if (code >= 0xd800 && code <= 0xdbff && k + 1 < text.length) k += 1;
    count += 1;
  }
  return { text, truncated: false };
}

/** Bytes an attachment adds to the JSON body (its payload dominates). */
export function payloadBytes(attachment) {
  return attachment.kind === 'image'
    ? String(attachment.dataUrl || '').length
    : new TextEncoder().encode(JSON.stringify(String(attachment.text || ''))).length;
}

/**
 * Reads `files` into attachments, next to the `existing` ones. Returns `{ added, errors }`:
 * each refused file has one error naming it and the limit.
 */
export async function readFiles(files, existing) {
  const added = [];
  const errors = [];
  let total = existing.reduce((n, a) => n + payloadBytes(a), 0);
  for (const file of files) {
    if (existing.length + added.length >= LIMITS.perMessage) {
      errors.push(`${file.name}: at most ${LIMITS.perMessage} attachments per message`);
      continue;
    }
    const id = crypto.randomUUID();
    let attachment;
    if ((file.type || '').startsWith('image/') || ['png', 'jpg', 'jpeg'].includes(extension(file.name))) {
      const mimeType = await sniffImage(file);
      if (!mimeType) {
        errors.push(`${file.name}: images must be PNG or JPEG`);
        continue;
      }
      if (file.size > LIMITS.imageBytes) {
        errors.push(`${file.name}: images are limited to 6 MB`);
        continue;
      }
      // The type the bytes say, not the file's name: the server checks the two agree.
      const read = await readDataUrl(file);
      const dataUrl = `data:${mimeType};base64,${read.slice(read.indexOf(',') + 1)}`;
      attachment = { kind: 'image', id, filename: file.name, mimeType, sizeBytes: file.size, dataUrl };
    } else if (isTextFile(file)) {
      if (file.size > LIMITS.textBytes) {
        errors.push(`${file.name}: text files are limited to 8 MB`);
        continue;
      }
      const { text, truncated } = cutToChars(await file.text(), LIMITS.textChars);
      attachment = {
        kind: 'text',
        id,
        filename: file.name,
        mimeType: file.type || 'text/plain',
        sizeBytes: file.size,
        text,
        truncated,
      };
    } else {
      errors.push(`${file.name}: only PNG or JPEG images and text files can be attached`);
      continue;
    }
    const bytes = payloadBytes(attachment);
    // A margin under the cap for the rest of the request (history, field names).
    if (total + bytes > LIMITS.bodyBytes - 256 * 1024) {
      errors.push(`${file.name}: the message would pass the 32 MB request limit`);
      continue;
    }
    total += bytes;
    added.push(attachment);
  }
  return { added, errors };
}

/** An image's data URL if it is one this page shows (PNG or JPEG, base64), else null. */
export function imageSource(attachment) {
  const url = attachment?.dataUrl;
  return typeof url === 'string' && /^data:image\/(png|jpeg);base64,[A-Za-z0-9+/=\s]*$/.test(url) ? url : null;
}
