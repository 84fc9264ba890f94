// Markdown for model output and search answers, rendered safely: the result is built from DOM
// nodes whose strings are all text nodes, so HTML in the model's answer shows as the characters
// it is made of and never becomes markup; a link's href is only ever an http(s) URL
// (dom.safeHref), anything else stays text; images are shown as links, never loaded. Code
// blocks keep their text exactly. The subset: paragraphs with line breaks, headings, fenced
// and indented code, block quotes, nested lists, tables, rules, and inline code, emphasis,
// strong, strikethrough, links and bare URLs. Unclosed fences (a reply still streaming) run to
// the end.
//
// Model output may be hostile in shape too: every scan is linear or bounded (no regex that
// backtracks on a long line, an opener with no closer remembered per paragraph, link labels and
// targets of bounded length), and nesting past MAX_DEPTH is shown as text, so no input freezes
// the page or overflows its stack.

import { append, externalLink, h, safeHref } from './dom.js';

const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*))?$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+(.*))?$/;
const TABLE_RULE = /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;
const INDENTED = /^( {4}|\t)/;
const MAX_DEPTH = 24;
const MAX_LABEL = 1000;
const MAX_TARGET = 2000;

/** A fence opening line: its marker and language, or null (a backtick fence's info has none). */
function fenceOf(line) {
  const m = FENCE.exec(line);
  if (!m || (m[1][0] === '`' && m[2].includes('`'))) return null;
  return { fence: m[1], lang: m[2].trim().split(/\s/)[0] || '' };
}

/** A heading's level and text (closing #s dropped), or null. */
function headingOf(line) {
  const m = HEADING.exec(line);
  if (!m) return null;
  let text = (m[2] || '').trimEnd();
  let end = text.length;
  while (end > 0 && text[end - 1] === '#') end -= 1;
  if (end < text.length && (end === 0 || text[end - 1] === ' ' || text[end - 1] === '\t')) {
    text = text.slice(0, end).trimEnd();
  }
  return { level: m[1].length, text };
}

function isTableRule(line) {
  return line !== undefined && line.includes('|') && line.includes('-') && TABLE_RULE.test(line);
}

export function renderMarkdown(text) {
  const fragment = document.createDocumentFragment();
  append(fragment, blocks(String(text ?? '').replace(/\r\n?/g, '\n').split('\n'), 0));
  return fragment;
}

function blank(line) {
  return line.trim() === '';
}

function startsBlock(line, next) {
  return (
    fenceOf(line) !== null ||
    headingOf(line) !== null ||
    RULE.test(line) ||
    QUOTE.test(line) ||
    ITEM.test(line) ||
    (line.includes('|') && isTableRule(next))
  );
}

function blocks(lines, depth) {
  if (depth > MAX_DEPTH) return [h('p', {}, lines.join('\n'))];
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (blank(line)) {
      i += 1;
      continue;
    }
    let m;
    const opened = fenceOf(line);
    if (opened) {
      const { fence, lang } = opened;
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
    const heading = headingOf(line);
    if (heading) {
      out.push(h(`h${heading.level}`, {}, inline(heading.text, depth)));
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
        // A line without `>` continues the quote's paragraph, unless it starts a block.
        if (!q && body.length && startsBlock(lines[i], lines[i + 1])) break;
        body.push(q ? q[1] : lines[i]);
        i += 1;
      }
      out.push(h('blockquote', {}, blocks(body, depth + 1)));
      continue;
    }
    if (ITEM.test(line)) {
      const [list, next] = listAt(lines, i, depth);
      out.push(list);
      i = next;
      continue;
    }
    if (line.includes('|') && isTableRule(lines[i + 1])) {
      const [table, next] = tableAt(lines, i, depth);
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
    out.push(h('p', {}, inline(para.map((l) => l.trim()).join('\n'), depth)));
  }
  return out;
}

/** A list from line `start`: its items, each rendered as blocks of its own (nested lists). */
function listAt(lines, start, depth) {
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
        body.push(dedent(line, contentIndent));
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
    const content = blocks(body, depth + 1);
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

/** `line` without its first `width` columns of indentation (a tab counts to the next 4). */
function dedent(line, width) {
  let column = 0;
  let k = 0;
  while (k < line.length && column < width && (line[k] === ' ' || line[k] === '\t')) {
    column = line[k] === '\t' ? column + 4 - (column % 4) : column + 1;
    k += 1;
  }
  return ' '.repeat(Math.max(0, column - width)) + line.slice(k);
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

function tableAt(lines, start, depth) {
  const head = cells(lines[start]);
  const align = cells(lines[start + 1]).map((c) =>
    c.startsWith(':') && c.endsWith(':') ? 'center' : c.endsWith(':') ? 'right' : c.startsWith(':') ? 'left' : null,
  );
  const cell = (tag, text, k) => h(tag, align[k] ? { class: `align-${align[k]}` } : {}, inline(text, depth));
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

/** Inline markdown to nodes. `\n` is a line break. Inside a link (`inLink`) no link is made. */
export function inline(text, depth = 0, inLink = false) {
  if (depth > MAX_DEPTH) return [text];
  const out = [];
  // Where an opener of each kind was found to have no closer: later ones have none either.
  const unclosed = {};
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
    if (c === '<' && !inLink) {
      const m = /^<(https?:\/\/[^\s<>]{1,2000})>/.exec(text.slice(i, i + 2100));
      if (m && safeHref(m[1])) {
        flush();
        out.push(externalLink(m[1], m[1]));
        i += m[0].length;
        continue;
      }
    }
    if (!inLink && (c === '[' || (c === '!' && text[i + 1] === '['))) {
      const link = linkAt(text, c === '!' ? i + 1 : i);
      if (link) {
        flush();
        const label = c === '!' ? [link.label ? `image: ${link.label}` : 'image'] : inline(link.label, depth + 1, true);
        const href = safeHref(link.url);
        // A link to anything but http(s) is shown as its words, the target dropped.
        out.push(href ? externalLink(href, label) : h('span', {}, label));
        i = link.end;
        continue;
      }
    }
    if (!inLink && (c === 'h' || c === 'H') && (i === 0 || /[\s(]/.test(text[i - 1]))) {
      const m = BARE_URL.exec(text.slice(i, i + MAX_TARGET));
      if (m) {
        flush();
        out.push(externalLink(m[0], m[0]));
        i += m[0].length;
        continue;
      }
    }
    if (c === '*' || c === '_' || c === '~') {
      const span = emphasisAt(text, i, unclosed);
      if (span) {
        flush();
        out.push(h(span.tag, {}, inline(span.inner, depth + 1, inLink)));
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
  const labelEnd = Math.min(text.length, i + MAX_LABEL);
  for (; k < labelEnd; k += 1) {
    if (text[k] === '\\') {
      k += 1;
      continue;
    }
    if (text[k] === '[') depth += 1;
    else if (text[k] === ']' && --depth === 0) break;
  }
  if (k >= labelEnd || text[k + 1] !== '(') return null;
  const label = text.slice(i + 1, k);
  let j = k + 2;
  let parens = 1;
  const targetEnd = Math.min(text.length, k + 2 + MAX_TARGET);
  for (; j < targetEnd; j += 1) {
    if (text[j] === '(') parens += 1;
    else if (text[j] === ')' && --parens === 0) break;
    else if (text[j] === '\n') return null;
  }
  if (j >= targetEnd) return null;
  let target = text.slice(k + 2, j).trim();
  const titled = /^(\S+)\s+["'(].*["')]$/.exec(target);
  if (titled) target = titled[1];
  if (target.startsWith('<') && target.endsWith('>')) target = target.slice(1, -1);
  return { label, url: target, end: j + 1 };
}

/** `**strong**`, `__strong__`, `*em*`, `_em_`, `~~del~~` at `i`, or null. */
function emphasisAt(text, i, unclosed) {
  const c = text[i];
  const double = text[i + 1] === c;
  if (c === '~' && !double) return null;
  const delim = double ? c + c : c;
  const start = i + delim.length;
  if (unclosed[delim] !== undefined && start >= unclosed[delim]) return null;
  if (start >= text.length || /\s/.test(text[start])) return null;
  // An underscore inside a word (snake_case) is a letter, not emphasis.
  if (c === '_' && i > 0 && /[\p{L}\p{N}]/u.test(text[i - 1])) return null;
  let k = start;
  while (k < text.length) {
    const end = text.indexOf(c, k);
    if (end === -1) break;
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
  unclosed[delim] = start;
  return null;
}
