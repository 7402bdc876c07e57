// The sidebar's host gives the page JupyterLab's theme: {light, vars:
// {"--jp-…": value}}. applyTheme sets the values on the page's root, which
// panel.css uses under [data-jp-theme]; the previous theme's go first. Only
// --jp-* names, and values of colours, sizes and font names: a value with
// any other CSS function (url(), image-set(), …) or an escape is dropped,
// so the theme loads nothing into the page. The standalone page gets no
// theme and follows the browser's light or dark preference.

const THEME_FUNCTIONS = /^(rgba?|hsla?|hwb|lab|lch|oklab|oklch|color|color-mix|calc|min|max|clamp)$/i;

function plainValue(v) {
  if (typeof v !== "string" || v.length > 500 || v.indexOf("\\") >= 0) return false;
  const re = /([a-z0-9_-]+)\s*\(/gi;
  let m;
  while ((m = re.exec(v))) if (!THEME_FUNCTIONS.test(m[1])) return false;
  return true;
}

export function applyTheme(t) {
  const root = document.documentElement;
  const vars = t.vars && typeof t.vars === "object" ? t.vars : {};
  for (let i = root.style.length - 1; i >= 0; i--) {
    if (root.style[i].indexOf("--jp-") === 0) root.style.removeProperty(root.style[i]);
  }
  for (const name of Object.keys(vars)) {
    if (/^--jp-[a-z0-9-]+$/.test(name) && plainValue(vars[name])) root.style.setProperty(name, vars[name]);
  }
  root.setAttribute("data-jp-theme", t.light === false ? "dark" : "light");
}
