// Small helpers of the page's DOM. Everything the panel shows is built
// with createElement and set with textContent (model text goes through
// markdown.js, which does the same): nothing is parsed as HTML.

/** The element with id. */
export const $ = (id) => document.getElementById(id);

/** A new element: tag, class names, text. */
export function el(tag, cls, txt) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (txt !== undefined && txt !== null) e.textContent = txt;
  return e;
}

/** A button of type button (no form is ever submitted: see index.html). */
export function button(cls, txt, onClick) {
  const b = el("button", cls, txt);
  b.type = "button";
  if (onClick) b.addEventListener("click", onClick);
  return b;
}

/** JSON.parse, or null. */
export function parseJSON(s) {
  try {
    return JSON.parse(s);
  } catch (e) {
    return null;
  }
}
