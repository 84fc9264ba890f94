// Markdown text to an mdast tree: CommonMark with GFM (tables, task lists, footnotes,
// strikethrough, autolink literals) and math ($$…$$, inline or as a block). A tree of data,
// never markup: web/assets/js/markdown.js builds the DOM from it. A single $ is text: chat is
// full of prices ("$5 and $10" would otherwise be typeset as math).
import { fromMarkdown } from 'mdast-util-from-markdown';
import { gfmFromMarkdown } from 'mdast-util-gfm';
import { mathFromMarkdown } from 'mdast-util-math';
import { gfm } from 'micromark-extension-gfm';
import { math } from 'micromark-extension-math';

/** The mdast root of `text`. */
export function parse(text) {
  return fromMarkdown(text, {
    extensions: [gfm(), math({ singleDollarTextMath: false })],
    mdastExtensions: [gfmFromMarkdown(), mathFromMarkdown()],
  });
}
