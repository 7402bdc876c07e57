// A small, safe markdown renderer for model text.
//
// It never parses HTML and never assigns innerHTML: it builds DOM nodes
// with createElement and text with createTextNode, so whatever the model
// writes (<script>, <img onerror=…>, <iframe>) stays literal text. Only
// these elements are produced: p, h1-h6, strong, em, del, code, pre, ul,
// ol, li, blockquote, hr, br, a. Links keep only http:, https: and
// mailto: targets (checked after parsing with URL); anything else
// (javascript:, data:, vbscript:, relative) becomes plain text.

var SAFE_PROTOCOLS = { "http:": true, "https:": true, "mailto:": true };

export function safeHref(raw) {
  var s = String(raw).trim();
  // Browsers strip control characters and whitespace inside schemes;
  // refuse them outright.
  if (/[\u0000-\u001f\u007f\s]/.test(s)) return null;
  var u;
  try { u = new URL(s); } catch (e) { return null; }
  if (!SAFE_PROTOCOLS[u.protocol]) return null;
  return u.href;
}

function el(tag, cls) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  return e;
}

function text(s) { return document.createTextNode(s); }

function link(label, href) {
  var safe = safeHref(href);
  if (!safe) return null;
  var a = el("a");
  a.setAttribute("href", safe);
  a.setAttribute("target", "_blank");
  a.setAttribute("rel", "noopener noreferrer nofollow");
  a.appendChild(text(label));
  return a;
}

// Inline markup: `code`, **strong**, *em* / _em_, ~~del~~, [text](url),
// <http://autolink>, bare http(s) URLs, and hard breaks on newlines.
var INLINE = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([\s\S]+?)\*\*|__([\s\S]+?)__|~~([\s\S]+?)~~|\*([^\s*][\s\S]*?)\*|(?:^|(?<=[\s(]))_([^\s_][\s\S]*?)_(?=$|[\s).,:;!?])|\[([^\]\n]{1,500})\]\(([^)\s]{1,2000})(?:\s+"[^"\n]*")?\)|<((?:https?|mailto):[^>\s]{1,2000})>|(https?:\/\/[^\s<>()]{1,2000}[^\s<>().,:;!?'"])|\n/g;

function inline(parent, s, depth) {
  depth = depth || 0;
  var last = 0, m;
  INLINE.lastIndex = 0;
  var re = new RegExp(INLINE.source, "g");
  while ((m = re.exec(s)) !== null) {
    if (m[0] === "" ) { re.lastIndex++; continue; }
    if (m.index > last) parent.appendChild(text(s.slice(last, m.index)));
    last = m.index + m[0].length;
    if (m[1]) {
      var c = el("code");
      c.appendChild(text(m[2].replace(/^ (.*) $/, "$1")));
      parent.appendChild(c);
    } else if (m[3] !== undefined || m[4] !== undefined) {
      var b = el("strong");
      nest(b, m[3] !== undefined ? m[3] : m[4], depth);
      parent.appendChild(b);
    } else if (m[5] !== undefined) {
      var d = el("del");
      nest(d, m[5], depth);
      parent.appendChild(d);
    } else if (m[6] !== undefined || m[7] !== undefined) {
      var i = el("em");
      nest(i, m[6] !== undefined ? m[6] : m[7], depth);
      parent.appendChild(i);
    } else if (m[8] !== undefined) {
      var a = link(m[8], m[9]);
      if (a) parent.appendChild(a);
      else parent.appendChild(text(m[0]));
    } else if (m[10] !== undefined || m[11] !== undefined) {
      var u = m[10] !== undefined ? m[10] : m[11];
      var a2 = link(u, u);
      parent.appendChild(a2 || text(m[0]));
    } else if (m[0] === "\n") {
      parent.appendChild(el("br"));
    }
  }
  if (last < s.length) parent.appendChild(text(s.slice(last)));
}

function nest(parent, s, depth) {
  if (depth > 8) { parent.appendChild(text(s)); return; }
  inline(parent, s, depth + 1);
}

var FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)[^\n]*$/;
var HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
var HR = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
var QUOTE = /^ {0,3}> ?(.*)$/;
var BULLET = /^( {0,3})([-*+])\s+(.*)$/;
var ORDERED = /^( {0,3})(\d{1,9})[.)]\s+(.*)$/;

function isBlockStart(line) {
  return FENCE.test(line) || HEADING.test(line) || HR.test(line) || QUOTE.test(line) ||
    BULLET.test(line) || ORDERED.test(line);
}

function blocks(parent, lines, depth) {
  var i = 0;
  while (i < lines.length) {
    var line = lines[i], m;
    if (/^\s*$/.test(line)) { i++; continue; }
    if ((m = FENCE.exec(line))) {
      var fence = m[1], body = [];
      i++;
      while (i < lines.length && !(new RegExp("^ {0,3}" + fence[0] + "{" + fence.length + ",}\\s*$").test(lines[i]))) {
        body.push(lines[i]); i++;
      }
      i++; // closing fence (or end: a stream still open)
      var pre = el("pre"), code = el("code");
      if (m[2]) code.className = "language-" + m[2].replace(/[^\w+#.-]/g, "");
      code.appendChild(text(body.join("\n")));
      pre.appendChild(code);
      parent.appendChild(pre);
      continue;
    }
    if ((m = HEADING.exec(line))) {
      var h = el("h" + m[1].length);
      inline(h, m[2]);
      parent.appendChild(h);
      i++;
      continue;
    }
    if (HR.test(line)) { parent.appendChild(el("hr")); i++; continue; }
    if (QUOTE.test(line)) {
      var q = [];
      while (i < lines.length && (m = QUOTE.exec(lines[i]))) { q.push(m[1]); i++; }
      var bq = el("blockquote");
      if (depth < 8) blocks(bq, q, depth + 1); else bq.appendChild(text(q.join("\n")));
      parent.appendChild(bq);
      continue;
    }
    if (BULLET.test(line) || ORDERED.test(line)) {
      var ordered = !BULLET.test(line);
      var re = ordered ? ORDERED : BULLET;
      var list = el(ordered ? "ol" : "ul");
      if (ordered) {
        var start = parseInt(ORDERED.exec(line)[2], 10);
        if (start !== 1 && isFinite(start)) list.setAttribute("start", String(start));
      }
      var item = null;
      while (i < lines.length) {
        var l = lines[i];
        if ((m = re.exec(l))) {
          item = { lines: [m[3]] };
          list.appendChild(renderItem(item, depth));
          i++;
          continue;
        }
        if (item && /^\s{2,}\S/.test(l)) {
          item.lines.push(l.replace(/^\s{2,4}/, ""));
          list.replaceChild(renderItem(item, depth), list.lastChild);
          i++;
          continue;
        }
        break;
      }
      parent.appendChild(list);
      continue;
    }
    var para = [];
    while (i < lines.length && !/^\s*$/.test(lines[i]) && !(para.length && isBlockStart(lines[i]))) {
      para.push(lines[i].replace(/^ {0,3}/, "")); i++;
    }
    var p = el("p");
    inline(p, para.join("\n"));
    parent.appendChild(p);
  }
}

function renderItem(item, depth) {
  var li = el("li");
  if (item.lines.length === 1 || depth >= 8) inline(li, item.lines.join("\n"));
  else blocks(li, item.lines, depth + 1);
  return li;
}

// render returns a DocumentFragment for markdown source s.
export function render(s) {
  var frag = document.createDocumentFragment();
  blocks(frag, String(s == null ? "" : s).replace(/\r\n?/g, "\n").split("\n"), 0);
  return frag;
}
