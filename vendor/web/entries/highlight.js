// Syntax highlighting as a hast tree (elements and text, never an HTML string): lowlight with
// highlight.js's `common` grammars. Nothing here touches the DOM.
import { common, createLowlight } from 'lowlight';

export const lowlight = createLowlight(common);

/** Whether `lang` (a name or alias) has a grammar. */
export function known(lang) {
  return typeof lang === 'string' && lang !== '' && lowlight.registered(lang);
}

/** The hast root of `code` highlighted as `lang`, or null if `lang` is empty or unknown. */
export function highlight(lang, code) {
  if (!known(lang)) return null;
  try {
    return lowlight.highlight(lang, code);
  } catch {
    return null;
  }
}
