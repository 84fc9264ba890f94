// Markdown for model output and search answers, rendered safely: the result is built from DOM
// nodes whose strings are all text nodes, so HTML in the model's answer shows as the characters
// it is made of and never becomes markup; a link's href is only ever an http(s) URL
// (dom.safeHref), anything else stays text; images are shown as links, never loaded. Code
// blocks keep their text exactly. The subset: paragraphs with line breaks, headings, fenced
// and indented code, block quotes, nested lists, tables, rules, and inline code, emphasis,
// strong, strikethrough, links and bare URLs. Unclosed fences (a reply still streaming) run to
// the end.

import { append, externalLink, h, safeHref } from './dom.js';

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+(.*))?$/;
const TABLE_RULE = /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;
const INDENTED = /^( {4}|\t)/;

export function renderMarkdown(text) {
  const fragment = document.createDocumentFragment();
  append(fragment, blocks(String(text ?? '').replace(/\r\n?/g, '\n').split('\n')));
  return fragment;
}

function blank(line) {
  return line.trim() === '';
}

function startsBlock(line, next) {
  return (
    FENCE.test(line) ||
    HEADING.test(line) ||
    RULE.test(line) ||
    QUOTE.test(line) ||
    ITEM.test(line) ||
    (line.includes('|') && next !== undefined && TABLE_RULE.test(next) && next.includes('-'))
  );
}

function blocks(lines) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (blank(line)) {
      i += 1;
      continue;
    }
    let m;
    if ((m = FENCE.exec(line))) {
      const [fence, lang] = [m[1], m[2]];
      const body = [];
      i += 1;
      while (i < lines.length) {
        const close = lines[i].trim();
        if (close.startsWith(fence[0].repeat(fence.length)) && /^(`+|~+)$/.test(close)) {
          i += 1;
          break;
        }
        body.push(lines[i]);
        i += 1;
      }
      const code = h('code', lang ? { 'data-lang': lang } : {}, body.join('\n'));
      out.push(h('pre', {}, code));
      continue;
    }
    if (INDENTED.test(line)) {
      const body = [];
      while (i < lines.length && (INDENTED.test(lines[i]) || blank(lines[i]))) {
        body.push(lines[i].replace(INDENTED, ''));
        i += 1;
      }
      while (body.length && blank(body[body.length - 1])) body.pop();
      out.push(h('pre', {}, h('code', {}, body.join('\n'))));
      continue;
    }
    if ((m = HEADING.exec(line))) {
      out.push(h(`h${m[1].length}`, {}, inline(m[2] || '')));
      i += 1;
      continue;
    }
    if (RULE.test(line)) {
      out.push(h('hr'));
      i += 1;
      continue;
    }
    if (QUOTE.test(line)) {
      const body = [];
      while (i < lines.length && !blank(lines[i])) {
        const q = QUOTE.exec(lines[i]);
        body.push(q ? q[1] : lines[i]);
        i += 1;
      }
      out.push(h('blockquote', {}, blocks(body)));
      continue;
    }
    if (ITEM.test(line)) {
      const [list, next] = listAt(lines, i);
      out.push(list);
      i = next;
      continue;
    }
    if (line.includes('|') && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1]) && lines[i + 1].includes('-')) {
      const [table, next] = tableAt(lines, i);
      out.push(table);
      i = next;
      continue;
    }
    const para = [line];
    i += 1;
    while (i < lines.length && !blank(lines[i]) && !startsBlock(lines[i], lines[i + 1])) {
      para.push(lines[i]);
      i += 1;
    }
    out.push(h('p', {}, inline(para.map((l) => l.trim()).join('\n'))));
  }
  return out;
}

/** A list from line `start`: its items, each rendered as blocks of its own (nested lists). */
function listAt(lines, start) {
  const first = ITEM.exec(lines[start]);
  const ordered = /\d/.test(first[2]);
  const list = ordered ? h('ol') : h('ul');
  if (ordered && parseInt(first[2], 10) !== 1) list.start = parseInt(first[2], 10);
  const baseIndent = first[1].length;
  let i = start;
  let loose = false;
  const items = [];
  while (i < lines.length) {
    const m = ITEM.exec(lines[i]);
    if (!m || m[1].length !== baseIndent || /\d/.test(m[2]) !== ordered) break;
    const contentIndent = m[1].length + m[2].length + 1;
    const body = [m[4] || ''];
    i += 1;
    while (i < lines.length) {
      const line = lines[i];
      if (blank(line)) {
        // A blank line continues the item only if something indented follows.
        const after = lines.slice(i + 1).find((l) => !blank(l));
        if (after !== undefined && indentOf(after) >= contentIndent) {
          body.push('');
          loose = true;
          i += 1;
          continue;
        }
        break;
      }
      if (indentOf(line) >= contentIndent) {
        body.push(line.slice(Math.min(contentIndent, indentOf(line))));
      } else if (ITEM.test(line) || startsBlock(line, lines[i + 1])) {
        break;
      } else {
        body.push(line.trim()); // a lazy continuation of the item's paragraph
      }
      i += 1;
    }
    items.push(body);
    // Blank lines between items make the list loose, as they do for everyone.
    if (i < lines.length && blank(lines[i])) {
      const after = lines.slice(i).findIndex((l) => !blank(l));
      const nextLine = after === -1 ? undefined : lines[i + after];
      const n = nextLine && ITEM.exec(nextLine);
      if (n && n[1].length === baseIndent && /\d/.test(n[2]) === ordered) {
        loose = true;
        i += after;
      }
    }
  }
  for (const body of items) {
    const content = blocks(body);
    const li = h('li');
    if (!loose && content.length && content[0].tagName === 'P') {
      append(li, [...content[0].childNodes]);
      append(li, content.slice(1));
    } else {
      append(li, content);
    }
    list.append(li);
  }
  return [list, i];
}

function indentOf(line) {
  const m = /^[ \t]*/.exec(line)[0];
  return m.replace(/\t/g, '    ').length;
}

function cells(line) {
  let row = line.trim();
  if (row.startsWith('|')) row = row.slice(1);
  if (row.endsWith('|') && !row.endsWith('\\|')) row = row.slice(0, -1);
  const out = [];
  let cell = '';
  for (let k = 0; k < row.length; k += 1) {
    if (row[k] === '\\' && row[k + 1] === '|') {
      cell += '|';
      k += 1;
    } else if (row[k] === '|') {
      out.push(cell.trim());
      cell = '';
    } else {
      cell += row[k];
    }
  }
  out.push(cell.trim());
  return out;
}

function tableAt(lines, start) {
  const head = cells(lines[start]);
  const align = cells(lines[start + 1]).map((c) =>
    c.startsWith(':') && c.endsWith(':') ? 'center' : c.endsWith(':') ? 'right' : c.startsWith(':') ? 'left' : null,
  );
  const cell = (tag, text, k) => h(tag, align[k] ? { class: `align-${align[k]}` } : {}, inline(text));
  const thead = h('thead', {}, h('tr', {}, head.map((c, k) => cell('th', c, k))));
  const tbody = h('tbody');
  let i = start + 2;
  while (i < lines.length && !blank(lines[i]) && lines[i].includes('|')) {
    const row = cells(lines[i]);
    tbody.append(h('tr', {}, head.map((_, k) => cell('td', row[k] ?? '', k))));
    i += 1;
  }
  return [h('div.table', {}, h('table', {}, thead, tbody)), i];
}

const PUNCT = /[!-/:-@[-`{-~]/;
const BARE_URL = /^https?:\/\/[^\s<>]*[^\s<>.,:;"'!?)\]*_~]/;

/** Inline markdown to nodes. `\n` is a line break. */
export function inline(text) {
  const out = [];
  let plain = '';
  const flush = () => {
    if (plain) out.push(plain);
    plain = '';
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '\\' && i + 1 < text.length && PUNCT.test(text[i + 1])) {
      plain += text[i + 1];
      i += 2;
      continue;
    }
    if (c === '\n') {
      flush();
      out.push(h('br'));
      i += 1;
      continue;
    }
    if (c === '`') {
      const run = /^`+/.exec(text.slice(i))[0];
      const end = text.indexOf(run, i + run.length);
      if (end !== -1 && text[end + run.length] !== '`') {
        flush();
        let code = text.slice(i + run.length, end).replace(/\n/g, ' ');
        if (/^ .* $/.test(code) && code.trim()) code = code.slice(1, -1);
        out.push(h('code', {}, code));
        i = end + run.length;
        continue;
      }
      plain += run;
      i += run.length;
      continue;
    }
    if (c === '<') {
      const m = /^<(https?:\/\/[^\s<>]+)>/.exec(text.slice(i));
      if (m && safeHref(m[1])) {
        flush();
        out.push(externalLink(m[1], m[1]));
        i += m[0].length;
        continue;
      }
    }
    if (c === '[' || (c === '!' && text[i + 1] === '[')) {
      const link = linkAt(text, c === '!' ? i + 1 : i);
      if (link) {
        flush();
        const label = c === '!' ? [link.label ? `image: ${link.label}` : 'image'] : inline(link.label);
        const href = safeHref(link.url);
        // A link to anything but http(s) is shown as its words, the target dropped.
        out.push(href ? externalLink(href, label) : h('span', {}, label));
        i = link.end;
        continue;
      }
    }
    if ((c === 'h' || c === 'H') && (i === 0 || /[\s(]/.test(text[i - 1]))) {
      const m = BARE_URL.exec(text.slice(i));
      if (m) {
        flush();
        out.push(externalLink(m[0], m[0]));
        i += m[0].length;
        continue;
      }
    }
    if (c === '*' || c === '_' || c === '~') {
      const span = emphasisAt(text, i);
      if (span) {
        flush();
        out.push(h(span.tag, {}, inline(span.inner)));
        i = span.end;
        continue;
      }
    }
    plain += c;
    i += 1;
  }
  flush();
  return out;
}

/** `[label](url "title")` at `i`: its parts and where it ends, or null. */
function linkAt(text, i) {
  let depth = 0;
  let k = i;
  for (; k < text.length; k += 1) {
    if (text[k] === '\\') {
      k += 1;
      continue;
    }
    if (text[k] === '[') depth += 1;
    else if (text[k] === ']' && --depth === 0) break;
  }
  if (k >= text.length || text[k + 1] !== '(') return null;
  const label = text.slice(i + 1, k);
  let j = k + 2;
  let parens = 1;
  for (; j < text.length; j += 1) {
    if (text[j] === '(') parens += 1;
    else if (text[j] === ')' && --parens === 0) break;
    else if (text[j] === '\n') return null;
  }
  if (j >= text.length) return null;
  let target = text.slice(k + 2, j).trim();
  const titled = /^(\S+)\s+["'(].*["')]$/.exec(target);
  if (titled) target = titled[1];
  if (target.startsWith('<') && target.endsWith('>')) target = target.slice(1, -1);
  return { label, url: target, end: j + 1 };
}

/** `**strong**`, `__strong__`, `*em*`, `_em_`, `~~del~~` at `i`, or null. */
function emphasisAt(text, i) {
  const c = text[i];
  const double = text[i + 1] === c;
  if (c === '~' && !double) return null;
  const delim = double ? c + c : c;
  const start = i + delim.length;
  if (start >= text.length || /\s/.test(text[start])) return null;
  // An underscore inside a word (snake_case) is a letter, not emphasis.
  if (c === '_' && i > 0 && /[\p{L}\p{N}]/u.test(text[i - 1])) return null;
  let k = start;
  while (k < text.length) {
    const end = text.indexOf(c, k);
    if (end === -1) return null;
    let run = 1;
    while (text[end + run] === c) run += 1;
    // The closing run must be the opening one's kind: `**` closes strong, a lone `*` em.
    const fits = double ? run >= 2 : run === 1;
    const wordAfter = c === '_' && /[\p{L}\p{N}]/u.test(text[end + run] || '');
    if (fits && end > start && !/\s/.test(text[end - 1]) && !wordAfter) {
      const tag = c === '~' ? 'del' : double ? 'strong' : 'em';
      return { tag, inner: text.slice(start, end), end: end + delim.length };
    }
    k = end + run;
  }
  return null;
}
