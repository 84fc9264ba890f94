// Markdown for model output and search answers. Parsing is CommonMark with GFM (tables, task
// lists, footnotes, strikethrough, autolink literals) and math, by micromark through
// mdast-util-from-markdown (vendored: ../vendor/markdown.js, built by vendor/web/build), so
// replies render as every other CommonMark renderer shows them. The parser only builds a tree
// of data (mdast); this file walks it and builds the DOM node by node with dom.js. One
// deliberate difference from CommonMark: a line break in a paragraph stays a line break (as in
// GitHub comments), since models write lines meaning lines.
//
// What is never done: no string is ever parsed as HTML (the page runs under Trusted Types,
// where that would throw anyway), so raw HTML in a reply shows as the characters it is made
// of; no href but an http(s) URL (dom.safeHref), anything else stays text; no image is
// loaded (an image is a link to it, `image: ALT`); no id is set from the text (footnotes are
// numbered, not anchored). Code blocks keep their text exactly, highlighted by lowlight
// (../vendor/highlight.js) as <span class="hljs-…"> elements built from its hast tree. Math
// ($$…$$; a single $ is text, chat being full of prices) is MathML built by Temml's DOM path
// (../vendor/math.js), a display formula when it stands alone; TeX that does not parse is
// shown as code. An unclosed fence (a reply still streaming) runs to the end, as
// CommonMark says.
//
// Model output may be hostile in shape too, and micromark, though it never backtracks, is
// slow on some shapes: quadratic in the emphasis and bracket delimiters of one paragraph, in
// the nested containers of one list, in lazy lines and in setext headings, and a tree
// thousands deep overflows the stack of its own tree walks. So a linear scan first
// (tooCostly) bounds what it is given, by the MAX_ constants below; past them the reply is
// shown as plain text, as it is if the parser throws. Then nesting past MAX_DEPTH is shown as
// its text, every walk of a deep tree is iterative, and at most MAX_MATH formulas are typeset
// and MAX_HIGHLIGHT characters of code highlighted, so no input freezes the page or overflows
// its stack.

import { parse } from '../vendor/markdown.js';
import { highlight } from '../vendor/highlight.js';
import { renderMath } from '../vendor/math.js';
import { append, externalLink, h, safeHref } from './dom.js';

const MAX_DEPTH = 24;
// Bounds on the parser's input. Measured with node 20 on micromark 4.0.3: past them a parse
// took seconds (a paragraph of 16000 `*a`: 3.5 s, of 8000 `a]`: 0.8 s; a list of 4000
// `- - x` lines: 2.8 s; 8000 lazy lines: 2.4 s; 4000 setext headings: 3.5 s; 3000 nested
// `- `: a stack overflow). Within them the worst shapes tried parse in 0.1 to 0.5 s; any
// markdown costs about 6 µs a character (100 000 characters of an ordinary reply: 0.6 s).
const MAX_LENGTH = 100000;
const MAX_LINES = 6000; // non-blank ones
const MAX_CONTAINERS = 2000;
const MAX_NESTED = 500;
const MAX_LAZY = 2000;
const MAX_SETEXT = 200;
const MAX_DELIMITERS = 3000;
const MAX_MARKS = 20000;
// Bounds on the rendering, per reply: characters of code highlighted, formulas typeset.
const MAX_HIGHLIGHT = 50000;
const MAX_MATH = 500;
// Where an `html` node stands as a block of its own, rather than inside a phrase.
const BLOCK_PARENTS = new Set(['root', 'blockquote', 'listItem', 'footnoteDefinition']);
const BLOCKS = new Set([
  'blockquote', 'code', 'footnoteDefinition', 'heading', 'html', 'list', 'listItem', 'math',
  'paragraph', 'table', 'tableRow', 'tableCell', 'thematicBreak',
]);

export function renderMarkdown(text) {
  const source = String(text ?? '').replace(/\r\n?/g, '\n');
  let tree = null;
  if (!tooCostly(source)) {
    try {
      tree = parse(source);
    } catch {
      tree = null; // a stack overflow on some shape not foreseen: shown as text, below
    }
  }
  if (!tree) return plainFragment(source);
  const context = {
    definitions: new Map(), // link reference definitions, identifier → url (the first wins)
    footnotes: new Map(), // footnote definitions, identifier → node (the first wins)
    numbers: new Map(), // referenced footnotes, identifier → number, in order of first reference
    inLink: false,
    highlightLeft: MAX_HIGHLIGHT,
    mathLeft: MAX_MATH,
  };
  collect(tree, context);
  const fragment = document.createDocumentFragment();
  append(fragment, children(tree, context, 0));
  // Footnotes, in order of first reference; one may reference another, numbered as it comes.
  const notes = [];
  for (const [id] of context.numbers) {
    notes.push(h('li', {}, children(context.footnotes.get(id), context, 1)));
  }
  if (notes.length) fragment.append(h('section.footnotes', {}, h('ol', {}, notes)));
  return fragment;
}

/** Text as paragraphs (split at blank lines) with line breaks: what a costly reply shows. */
function plainFragment(text) {
  const fragment = document.createDocumentFragment();
  for (const para of text.split(/\n[ \t]*\n/)) {
    if (para.trim()) fragment.append(h('p', {}, lines(para)));
  }
  return fragment;
}

/**
 * Whether `text` is past the bounds on what the parser is given. One pass over its lines,
 * counting: the container markers opening each (`>`, `-`, `*`, `+`, `1.`, `1)`; nested if
 * after another or indented); lazy lines (neither markers nor 4 columns of indentation, after
 * a line with markers or a footnote definition `[^`, in a run of non-blank lines); setext
 * underlines (`===` or `---` alone, after a non-blank line); the delimiters of each run of
 * non-blank lines (`*`, `~`, `[`, `]`, and `_` not inside a word), whose cost grows as their
 * square; and those with the other characters that start an inline construct or a table cell
 * (`` ` `` `$` `<` `&` `!` `\` `|` `@`), each costing micromark some 10 to 30 µs. Each is
 * counted generously: the bounds are on what micromark might make of a line.
 */
function tooCostly(text) {
  if (text.length > MAX_LENGTH) return true;
  let lineCount = 0; // non-blank lines
  let containers = 0;
  let nested = 0;
  let lazy = 0;
  let setext = 0;
  let inContainer = false; // a line of this run of non-blank lines opened a container
  let previousBlank = true;
  let marks = 0; // characters that may start an inline construct or a table cell
  let delimiters = 0; // in the current run of non-blank lines
  let cost = 0; // Σ delimiters² over the runs
  const budget = MAX_DELIMITERS * MAX_DELIMITERS;
  let start = 0;
  while (start <= text.length) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    const line = containerMarkers(text, start, end);
    const { markers, indent, content } = line;
    const i = line.after;
    containers += markers;
    nested += line.nested;
    if (containers > MAX_CONTAINERS || nested > MAX_NESTED) return true;
    const blank = i === end;
    if (!blank && (lineCount += 1) > MAX_LINES) return true;
    if (!blank && markers === 0) {
      if (indent < 4 && text[i] === '[' && text[i + 1] === '^') inContainer = true;
      else if (inContainer && indent < 4) lazy += 1;
    }
    const c = text[content];
    if (!previousBlank && indent < 4 && (c === '=' || c === '-') && SETEXT.test(text.slice(content, end))) {
      setext += 1;
    }
    if (lazy > MAX_LAZY || setext > MAX_SETEXT) return true;
    if (markers > 0) inContainer = true;
    previousBlank = blank;
    // The line's delimiters; a blank line ends a run.
    if (blank) {
      cost += delimiters * delimiters;
      delimiters = 0;
      inContainer = false;
    } else {
      for (let k = start; k < end; k += 1) {
        const c = text[k];
        if (c === '*' || c === '~' || c === '[' || c === ']' || (c === '_' && !(isWordChar(text[k - 1]) && isWordChar(text[k + 1])))) {
          delimiters += 1;
          marks += 1;
        } else if (MARKS.includes(c)) {
          marks += 1;
        }
      }
      if (cost + delimiters * delimiters > budget || marks > MAX_MARKS) return true;
    }
    start = end + 1;
  }
  return false;
}

/**
 * The container markers (`>`, list bullets and numbers) that open the line from `start` to
 * `end`: how many, how many of them nested (after another on the line, or indented), the line's
 * own indentation in columns, where its first non-blank character is, and where its text after
 * the markers starts.
 */
function containerMarkers(text, start, end) {
  let i = start;
  let markers = 0;
  let nested = 0;
  let indent = -1;
  let content = start;
  for (;;) {
    let columns = 0;
    while (i < end && (text[i] === ' ' || text[i] === '\t')) {
      columns += text[i] === '\t' ? 4 : 1;
      i += 1;
    }
    if (indent === -1) {
      indent = columns;
      content = i;
    }
    const next = markerEnd(text, i, end);
    if (next === i) break;
    if (markers > 0 || columns >= 2) nested += 1;
    markers += 1;
    i = next;
  }
  return { markers, nested, indent, content, after: i };
}

/** Where a container marker at `i` ends (`>`, `-`/`*`/`+` or `1.`/`1)` before a space), or `i`. */
function markerEnd(text, i, end) {
  const c = text[i];
  const spaced = (k) => k === end || text[k] === ' ' || text[k] === '\t';
  if (c === '>') return i + 1;
  if ((c === '-' || c === '*' || c === '+') && spaced(i + 1)) return i + 1;
  if (c >= '0' && c <= '9') {
    let j = i;
    while (j < end && j - i < 10 && text[j] >= '0' && text[j] <= '9') j += 1;
    if (j - i <= 9 && (text[j] === '.' || text[j] === ')') && spaced(j + 1)) return j + 1;
  }
  return i;
}

const MARKS = '`$<&!\\|@';
const SETEXT = /^(?:=+|-+)[ \t]*$/;
const WORD = /[\p{L}\p{N}]/u;
function isWordChar(c) {
  return c !== undefined && WORD.test(c);
}

/** Every definition and footnote definition in the tree, found without recursion. */
function collect(tree, context) {
  const stack = [tree];
  while (stack.length) {
    const node = stack.pop();
    if (node.type === 'definition' && !context.definitions.has(node.identifier)) {
      context.definitions.set(node.identifier, node.url);
    } else if (node.type === 'footnoteDefinition' && !context.footnotes.has(node.identifier)) {
      context.footnotes.set(node.identifier, node);
    }
    if (node.children) for (let i = node.children.length - 1; i >= 0; i -= 1) stack.push(node.children[i]);
  }
}

/** The text a subtree holds, found without recursion (for what is nested too deep). */
function plainText(tree) {
  let out = '';
  const stack = [tree];
  while (stack.length) {
    const node = stack.pop();
    if (typeof node.value === 'string') out += node.value;
    else if (node.type === 'image' || node.type === 'imageReference') out += node.alt || '';
    else if (node.type === 'break') out += '\n';
    if (node.children) for (let i = node.children.length - 1; i >= 0; i -= 1) stack.push(node.children[i]);
  }
  return out;
}

/** Text with its line breaks as <br>. */
function lines(value) {
  const out = [];
  value.split('\n').forEach((line, i) => {
    if (i) out.push(h('br'));
    if (line) out.push(line);
  });
  return out;
}

function children(node, context, depth) {
  return (node.children || []).map((child) => render(child, context, depth + 1, node));
}

/** Nodes (or strings, appended as text) for one mdast node, a child of `parent`. */
function render(node, context, depth, parent) {
  if (depth > MAX_DEPTH) {
    const text = plainText(node);
    return BLOCKS.has(node.type) ? h('p', {}, text) : text;
  }
  const inner = () => children(node, context, depth);
  switch (node.type) {
    case 'paragraph': {
      // `$$…$$` alone on its line (as models write a formula) is a display formula, as a
      // `$$` block is.
      const only = node.children?.length === 1 ? node.children[0] : null;
      if (only?.type === 'inlineMath') return math(only.value, true, context);
      return h('p', {}, inner());
    }
    case 'heading':
      return h(`h${Math.min(Math.max(node.depth, 1), 6)}`, {}, inner());
    case 'thematicBreak':
      return h('hr');
    case 'blockquote':
      return h('blockquote', {}, inner());
    case 'list':
      return list(node, context, depth);
    case 'code':
      return codeBlock(node, context);
    case 'math':
      return math(node.value, true, context);
    case 'inlineMath':
      return math(node.value, false, context);
    case 'table':
      return table(node, context, depth);
    case 'html':
      // Raw HTML is shown as the characters it is made of; a block of it as a paragraph.
      return BLOCK_PARENTS.has(parent?.type) ? h('p', {}, lines(node.value)) : lines(node.value);
    case 'definition':
    case 'footnoteDefinition':
      return null; // resolved through context; footnotes are listed at the end
    case 'text':
      return lines(node.value);
    case 'emphasis':
      return h('em', {}, inner());
    case 'strong':
      return h('strong', {}, inner());
    case 'delete':
      return h('del', {}, inner());
    case 'inlineCode':
      return h('code', {}, node.value.replace(/\r?\n|\r/g, ' '));
    case 'break':
      return h('br');
    case 'link':
      return link(node.url, node, context, depth);
    case 'linkReference': {
      const url = context.definitions.get(node.identifier);
      // micromark makes one only for a defined label; were it not, its words in brackets.
      if (url === undefined) return ['[', inner(), ']'];
      return link(url, node, context, depth);
    }
    case 'image':
      return image(node.url, node.alt, context);
    case 'imageReference': {
      const url = context.definitions.get(node.identifier);
      if (url === undefined) return `![${node.alt || ''}]`;
      return image(url, node.alt, context);
    }
    case 'footnoteReference':
      return footnoteReference(node, context);
    default:
      return node.children ? inner() : typeof node.value === 'string' ? lines(node.value) : null;
  }
}

function link(url, node, context, depth) {
  if (context.inLink) return children(node, context, depth); // no link inside a link
  context.inLink = true;
  try {
    // A link to anything but http(s) is shown as its words (a <span>), the target dropped.
    return externalLink(url, children(node, context, depth));
  } finally {
    context.inLink = false;
  }
}

/** An image is never loaded: it is a link to its URL, labelled `image: ALT`. */
function image(url, alt, context) {
  const label = alt ? `image: ${alt}` : 'image';
  if (context.inLink || !safeHref(url)) return label;
  return externalLink(url, label);
}

function footnoteReference(node, context) {
  if (!context.footnotes.has(node.identifier)) return `[^${node.label || node.identifier}]`;
  if (!context.numbers.has(node.identifier)) context.numbers.set(node.identifier, context.numbers.size + 1);
  return h('sup.footnote-ref', {}, `[${context.numbers.get(node.identifier)}]`);
}

function list(node, context, depth) {
  const ordered = node.ordered === true;
  const start = ordered && typeof node.start === 'number' && node.start !== 1 ? node.start : undefined;
  // As CommonMark renderers do: a list is loose if it or any item is spread; the paragraphs
  // of a tight list's items show without <p>.
  const loose = node.spread === true || node.children.some(itemLoose);
  const items = node.children.map((item) => {
    const content = item.children.map((child) =>
      !loose && child.type === 'paragraph' && depth + 2 <= MAX_DEPTH
        ? children(child, context, depth + 2)
        : render(child, context, depth + 2, item),
    );
    if (typeof item.checked !== 'boolean') return h('li', {}, content);
    const box = h('input', { type: 'checkbox', disabled: true });
    box.defaultChecked = item.checked; // the `checked` attribute
    if (content.length && item.children[0].type === 'paragraph') {
      // The box goes at the start of the first paragraph, as GFM renders it.
      const first = content[0];
      if (first instanceof Element && first.tagName === 'P') first.prepend(box, ' ');
      else content[0] = [box, ' ', first];
    } else {
      content.unshift(box);
    }
    return h('li.task', {}, content);
  });
  return h(ordered ? 'ol' : 'ul', { start }, items);
}

function itemLoose(item) {
  return item.spread === null || item.spread === undefined ? item.children.length > 1 : item.spread;
}

function table(node, context, depth) {
  const align = node.align || [];
  const [head, ...rows] = node.children;
  const width = head ? head.children.length : 0;
  const row = (tag, r) => {
    const cells = [];
    for (let k = 0; k < width; k += 1) {
      const cell = r.children[k];
      const attrs = align[k] ? { class: `align-${align[k]}` } : {};
      cells.push(h(tag, attrs, cell ? children(cell, context, depth + 2) : []));
    }
    return h('tr', {}, cells);
  };
  const thead = h('thead', {}, head ? row('th', head) : []);
  const tbody = h('tbody', {}, rows.map((r) => row('td', r)));
  return h('div.table', {}, h('table', {}, thead, tbody));
}

/** `code` as a highlighted block (up to MAX_HIGHLIGHT characters highlighted): the python
 * tool's card shows the code it ran this way. */
export function codeElement(lang, code) {
  return codeBlock({ lang, value: String(code ?? '') }, { highlightLeft: MAX_HIGHLIGHT });
}

function codeBlock(node, context) {
  const lang = typeof node.lang === 'string' ? node.lang : '';
  const code = node.value;
  let root = null;
  if (lang && code.length <= context.highlightLeft) {
    root = highlight(lang, code);
    if (root) context.highlightLeft -= code.length;
  }
  const body = root ? fromHast(root, 0) : code;
  return h('pre', {}, h('code', lang ? { 'data-lang': lang } : {}, body));
}

/** Highlighted code from lowlight's hast: <span class> elements and text, nothing else. */
function fromHast(node, depth) {
  const out = [];
  for (const child of node.children || []) {
    if (child.type === 'text') {
      out.push(child.value);
    } else if (child.type === 'element' && child.tagName === 'span') {
      if (depth >= MAX_DEPTH) {
        out.push(plainText(child));
        continue;
      }
      const classes = (child.properties?.className || []).filter(
        (c) => typeof c === 'string' && /^[\w-]+$/.test(c),
      );
      out.push(h('span', classes.length ? { class: classes.join(' ') } : {}, fromHast(child, depth + 1)));
    }
  }
  return out;
}

/** TeX as MathML, or as code if it does not parse (or MAX_MATH formulas are typeset). */
function math(tex, display, context) {
  const box = display ? h('div.math-display') : h('span.math-inline');
  const typeset = context.mathLeft > 0 && renderMath(tex, box, display);
  context.mathLeft -= 1;
  if (!typeset) append(box, [h('code', {}, tex)]);
  return box;
}
