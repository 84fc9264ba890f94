// TeX to MathML with Temml's DOM path: temml.render builds elements with
// document.createElementNS / createTextNode / appendChild (no markup string is parsed).
// Untrusted input: `trust: false` refuses \class, \id, \style, \data and \includegraphics;
// \ref and \eqref make <a href="#…"> links, which are unwrapped here so that no link but
// an http(s) one ever reaches the page; \label with \tag or a numbered environment sets an
// element's id from the TeX, which would shadow the page's own ids (its live regions), so
// every id is removed too.
import temml from 'temml';

/**
 * Renders `tex` into `element` as a <math> element. Returns true, or false (with `element`
 * emptied) if the TeX does not parse.
 */
export function renderMath(tex, element, displayMode = false) {
  try {
    temml.render(String(tex), element, {
      displayMode,
      throwOnError: true,
      trust: false,
      maxExpand: 1000, // macro expansions, against a macro that expands forever
      maxSize: [50, 600], // \rule, \kern, …: at most 50em and 600pt
    });
  } catch {
    element.replaceChildren();
    return false;
  }
  for (const a of [...element.getElementsByTagName('a')]) a.replaceWith(...a.childNodes);
  for (const marked of [...element.querySelectorAll('[id]')]) marked.removeAttribute('id');
  return true;
}
