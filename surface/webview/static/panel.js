// agentkernel's web panel, bundled from surface/webview/panel/src by surface/webview/panel/build.mjs: do not edit.
// sources sha256 9434d4b616d30e09ab8a280ab8457e3d417f07afeda0f267629d76e60baf2c2f
(() => {
  // src/dom.js
  var $ = (id) => document.getElementById(id);
  function el(tag, cls, txt) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (txt !== void 0 && txt !== null) e.textContent = txt;
    return e;
  }
  function button(cls, txt, onClick) {
    const b = el("button", cls, txt);
    b.type = "button";
    if (onClick) b.addEventListener("click", onClick);
    return b;
  }
  function parseJSON(s) {
    try {
      return JSON.parse(s);
    } catch (e) {
      return null;
    }
  }

  // src/markdown.js
  var SAFE_PROTOCOLS = { "http:": true, "https:": true, "mailto:": true };
  function safeHref(raw) {
    var s = String(raw).trim();
    if (/[\u0000-\u001f\u007f\s]/.test(s)) return null;
    var u;
    try {
      u = new URL(s);
    } catch (e) {
      return null;
    }
    if (!SAFE_PROTOCOLS[u.protocol]) return null;
    return u.href;
  }
  function el2(tag, cls) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    return e;
  }
  function text(s) {
    return document.createTextNode(s);
  }
  function link(label, href) {
    var safe = safeHref(href);
    if (!safe) return null;
    var a = el2("a");
    a.setAttribute("href", safe);
    a.setAttribute("target", "_blank");
    a.setAttribute("rel", "noopener noreferrer nofollow");
    a.appendChild(text(label));
    return a;
  }
  var INLINE = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([\s\S]+?)\*\*|__([\s\S]+?)__|~~([\s\S]+?)~~|\*([^\s*][\s\S]*?)\*|(?:^|(?<=[\s(]))_([^\s_][\s\S]*?)_(?=$|[\s).,:;!?])|\[([^\]\n]{1,500})\]\(([^)\s]{1,2000})(?:\s+"[^"\n]*")?\)|<((?:https?|mailto):[^>\s]{1,2000})>|(https?:\/\/[^\s<>()]{1,2000}[^\s<>().,:;!?'"])|\n/g;
  function inline(parent, s, depth) {
    depth = depth || 0;
    var last = 0, m;
    INLINE.lastIndex = 0;
    var re = new RegExp(INLINE.source, "g");
    while ((m = re.exec(s)) !== null) {
      if (m[0] === "") {
        re.lastIndex++;
        continue;
      }
      if (m.index > last) parent.appendChild(text(s.slice(last, m.index)));
      last = m.index + m[0].length;
      if (m[1]) {
        var c = el2("code");
        c.appendChild(text(m[2].replace(/^ (.*) $/, "$1")));
        parent.appendChild(c);
      } else if (m[3] !== void 0 || m[4] !== void 0) {
        var b = el2("strong");
        nest(b, m[3] !== void 0 ? m[3] : m[4], depth);
        parent.appendChild(b);
      } else if (m[5] !== void 0) {
        var d = el2("del");
        nest(d, m[5], depth);
        parent.appendChild(d);
      } else if (m[6] !== void 0 || m[7] !== void 0) {
        var i = el2("em");
        nest(i, m[6] !== void 0 ? m[6] : m[7], depth);
        parent.appendChild(i);
      } else if (m[8] !== void 0) {
        var a = link(m[8], m[9]);
        if (a) parent.appendChild(a);
        else parent.appendChild(text(m[0]));
      } else if (m[10] !== void 0 || m[11] !== void 0) {
        var u = m[10] !== void 0 ? m[10] : m[11];
        var a2 = link(u, u);
        parent.appendChild(a2 || text(m[0]));
      } else if (m[0] === "\n") {
        parent.appendChild(el2("br"));
      }
    }
    if (last < s.length) parent.appendChild(text(s.slice(last)));
  }
  function nest(parent, s, depth) {
    if (depth > 8) {
      parent.appendChild(text(s));
      return;
    }
    inline(parent, s, depth + 1);
  }
  var FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)[^\n]*$/;
  var HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
  var HR = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
  var QUOTE = /^ {0,3}> ?(.*)$/;
  var BULLET = /^( {0,3})([-*+])\s+(.*)$/;
  var ORDERED = /^( {0,3})(\d{1,9})[.)]\s+(.*)$/;
  function isBlockStart(line) {
    return FENCE.test(line) || HEADING.test(line) || HR.test(line) || QUOTE.test(line) || BULLET.test(line) || ORDERED.test(line);
  }
  function blocks(parent, lines, depth) {
    var i = 0;
    while (i < lines.length) {
      var line = lines[i], m;
      if (/^\s*$/.test(line)) {
        i++;
        continue;
      }
      if (m = FENCE.exec(line)) {
        var fence = m[1], body = [];
        i++;
        while (i < lines.length && !new RegExp("^ {0,3}" + fence[0] + "{" + fence.length + ",}\\s*$").test(lines[i])) {
          body.push(lines[i]);
          i++;
        }
        i++;
        var pre = el2("pre"), code = el2("code");
        if (m[2]) code.className = "language-" + m[2].replace(/[^\w+#.-]/g, "");
        code.appendChild(text(body.join("\n")));
        pre.appendChild(code);
        parent.appendChild(pre);
        continue;
      }
      if (m = HEADING.exec(line)) {
        var h = el2("h" + m[1].length);
        inline(h, m[2]);
        parent.appendChild(h);
        i++;
        continue;
      }
      if (HR.test(line)) {
        parent.appendChild(el2("hr"));
        i++;
        continue;
      }
      if (QUOTE.test(line)) {
        var q = [];
        while (i < lines.length && (m = QUOTE.exec(lines[i]))) {
          q.push(m[1]);
          i++;
        }
        var bq = el2("blockquote");
        if (depth < 8) blocks(bq, q, depth + 1);
        else bq.appendChild(text(q.join("\n")));
        parent.appendChild(bq);
        continue;
      }
      if (BULLET.test(line) || ORDERED.test(line)) {
        var ordered = !BULLET.test(line);
        var re = ordered ? ORDERED : BULLET;
        var list = el2(ordered ? "ol" : "ul");
        if (ordered) {
          var start = parseInt(ORDERED.exec(line)[2], 10);
          if (start !== 1 && isFinite(start)) list.setAttribute("start", String(start));
        }
        var item = null;
        while (i < lines.length) {
          var l = lines[i];
          if (m = re.exec(l)) {
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
        para.push(lines[i].replace(/^ {0,3}/, ""));
        i++;
      }
      var p = el2("p");
      inline(p, para.join("\n"));
      parent.appendChild(p);
    }
  }
  function renderItem(item, depth) {
    var li = el2("li");
    if (item.lines.length === 1 || depth >= 8) inline(li, item.lines.join("\n"));
    else blocks(li, item.lines, depth + 1);
    return li;
  }
  function render(s) {
    var frag = document.createDocumentFragment();
    blocks(frag, String(s == null ? "" : s).replace(/\r\n?/g, "\n").split("\n"), 0);
    return frag;
  }

  // src/review.js
  function askDiff(p) {
    if (!p || p.ask !== "tool") return "";
    const t = parseJSON(p.text);
    return t && typeof t.diff === "string" ? t.diff : "";
  }
  function kind(line) {
    if (line.startsWith("- ") || line === "-") return "del";
    if (line.startsWith("+ ") || line === "+") return "add";
    if (line.startsWith("  ") || line === "") return "ctx";
    return "head";
  }
  function diffView(diff) {
    const box = el("div", "celldiff");
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", "the change");
    const lines = diff.replace(/\n$/, "").split("\n");
    for (const line of lines) {
      const k = kind(line);
      box.appendChild(el("div", "dl dl-" + k, line === "" ? " " : line));
    }
    return box;
  }
  function reviewTitle(p) {
    const t = parseJSON(p.text) || {};
    const head = askDiff(p).split("\n").find((l) => kind(l) === "head");
    const what = head ? head.replace(/:$/, "") : t.tool || "a tool";
    return "Review the agent's change to " + what;
  }

  // src/render.js
  function isUserPrompt(m, i) {
    return m.type === "say" && (m.say === "user_feedback" || m.say === "text" && i === 0);
  }
  var SAFE_IMG = /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]+$/;
  function md(s) {
    const d = el("div", "markdown");
    d.appendChild(render(s || ""));
    return d;
  }
  function reasoning(s, open) {
    const d = el("details", "reasoning");
    if (open) d.open = true;
    d.appendChild(el("summary", "", "Reasoning"));
    d.appendChild(el("div", "plain", s));
    return d;
  }
  function sayBody(m, i, box, body, on2) {
    const kind2 = m.say;
    switch (kind2) {
      case "text":
        if (isUserPrompt(m, i)) {
          box.classList.add("user");
          body.appendChild(el("div", "plain", m.text));
        } else {
          box.classList.add("model");
          body.appendChild(md(m.text));
        }
        break;
      case "user_feedback":
        box.classList.add("user");
        body.appendChild(el("div", "plain", m.text));
        break;
      case "reasoning":
        body.appendChild(reasoning(m.text || m.reasoning, m.partial));
        break;
      case "completion_result":
        box.classList.add("model", "result");
        body.appendChild(el("div", "label", "Result"));
        body.appendChild(md(m.text));
        break;
      case "error":
      case "diff_error":
      case "condense_context_error":
        box.classList.add("error");
        if (m.settings && on2.settings) body.appendChild(button("primary open-settings", "Open Settings", on2.settings));
        body.appendChild(el("pre", "errtext", m.text));
        break;
      case "command_output":
        box.classList.add("output");
        body.appendChild(el("div", "label", "Output"));
        body.appendChild(el("pre", "out", m.text || "(no output)"));
        break;
      case "cell_executed":
        box.classList.add("output");
        body.appendChild(el("div", "label", "You ran a cell"));
        body.appendChild(el("pre", "out", m.text));
        break;
      case "mcp_server_request_started": {
        box.classList.add("meta");
        const r = parseJSON(m.text) || {};
        body.appendChild(el("span", "", "MCP " + (r.serverName || "") + " · " + (r.toolName || "") + (m.progressStatus && m.progressStatus.text ? " · " + m.progressStatus.text : "")));
        break;
      }
      case "mcp_server_response":
        box.classList.add("output");
        body.appendChild(el("div", "label", "MCP result"));
        body.appendChild(el("pre", "out", m.text || "(no output)"));
        break;
      case "api_req_started":
        box.classList.add("meta");
        body.appendChild(el("span", "", m.partial ? "Asking the model…" : "Model request"));
        break;
      case "tool_result": {
        box.classList.add("meta");
        const tr = parseJSON(m.text) || {};
        body.appendChild(el("span", "", (tr.ok ? "✓ " : "✗ ") + (tr.tool || "tool") + ": " + (tr.summary || "")));
        if (tr.diff) body.appendChild(diffView(tr.diff));
        break;
      }
      case "api_req_finished": {
        box.classList.add("meta");
        const u = parseJSON(m.text) || {};
        body.appendChild(el("span", "", "↳ " + (u.model ? u.model + " · " : "") + (u.tokensIn || 0) + " in · " + (u.tokensOut || 0) + " out tokens · $" + Number(u.cost || 0).toFixed(4) + (u.latencyMs != null ? " · first token " + (u.latencyMs / 1e3).toFixed(2) + " s" : "") + (u.durationMs != null ? " · " + (u.durationMs / 1e3).toFixed(1) + " s" : "")));
        break;
      }
      case "api_req_retried":
      case "api_req_retry_delayed":
      case "condense_context":
      case "sliding_window_truncation":
      case "kernel_status":
      case "checkpoint_saved":
        box.classList.add("meta");
        body.appendChild(el("span", "", kind2.replace(/_/g, " ") + (m.text ? ": " + m.text : "")));
        break;
      default:
        body.appendChild(el("div", "plain", m.text));
    }
    if (m.reasoning && kind2 !== "reasoning") body.insertBefore(reasoning(m.reasoning, m.partial), body.firstChild);
  }
  function askBody(m) {
    const d = el("div", "askbody");
    const answered = m.isAnswered ? " (answered)" : "";
    switch (m.ask) {
      case "command": {
        const what = m.cell ? "cell " + m.cell + " of the notebook" : "code";
        d.appendChild(el("div", "label", m.isAnswered ? (m.cell ? "Cell " + m.cell : "Code") + " (answered)" : "The agent wants to run " + what));
        const pre = el("pre", "code");
        pre.appendChild(el("code", "", m.text));
        d.appendChild(pre);
        break;
      }
      case "tool": {
        if (askDiff(m)) {
          d.appendChild(el("div", "label", reviewTitle(m) + answered));
          d.appendChild(diffView(askDiff(m)));
          break;
        }
        const t = parseJSON(m.text) || {};
        d.appendChild(el("div", "label", "The agent wants to use " + (t.tool || "a tool") + answered));
        d.appendChild(el("pre", "code", t.input !== void 0 ? JSON.stringify(t.input, null, 2) : m.text));
        break;
      }
      case "use_mcp_server": {
        const a = parseJSON(m.text) || {};
        d.appendChild(el("div", "label", "The agent wants to use the MCP tool " + (a.toolName || "?") + " of " + (a.serverName || "?") + answered));
        d.appendChild(el("pre", "code", a.arguments || m.text));
        break;
      }
      case "followup": {
        const q = parseJSON(m.text) || { question: m.text };
        d.appendChild(el("div", "label", "Question"));
        d.appendChild(md(q.question || m.text));
        break;
      }
      case "completion_result":
        d.appendChild(el("div", "label", "Task complete" + (m.text ? "" : ".")));
        if (m.text) d.appendChild(md(m.text));
        break;
      case "api_req_failed":
        d.classList.add("error");
        d.appendChild(el("div", "label", "The model request failed"));
        d.appendChild(el("pre", "errtext", m.text));
        break;
      default:
        d.appendChild(el("div", "label", String(m.ask).replace(/_/g, " ")));
        if (m.text) d.appendChild(el("div", "plain", m.text));
    }
    return d;
  }
  function actions(m, i, on2) {
    const a = el("div", "actions");
    const rw = button("link rewind", "⟲ rewind to here", () => on2.rewind(m.ts));
    rw.title = "Go back to before this message: the conversation, and what you choose of the files and the kernel";
    a.appendChild(rw);
    if (isUserPrompt(m, i)) a.appendChild(button("link edit", "✎ edit", () => on2.edit(m)));
    return a;
  }
  function renderMessage(m, i, on2) {
    const box = el("article", "msg");
    const kind2 = m.ask || m.say;
    box.dataset.ts = String(m.ts);
    box.dataset.kind = m.type + ":" + kind2;
    if (m.partial) box.classList.add("partial");
    const body = el("div", "body");
    if (m.type === "say") {
      sayBody(m, i, box, body, on2);
    } else {
      box.classList.add("askmsg");
      if (m.isAnswered) box.classList.add("answered");
      body.appendChild(askBody(m));
    }
    for (const src of m.images || []) {
      if (!SAFE_IMG.test(src)) continue;
      const img = el("img", "image");
      img.alt = kind2 === "text" || kind2 === "user_feedback" ? "attached image" : "output image";
      img.src = src;
      body.appendChild(img);
    }
    box.appendChild(body);
    box.appendChild(actions(m, i, on2));
    return box;
  }
  var Timeline = class {
    constructor(mirror2, on2) {
      this.mirror = mirror2;
      this.on = on2;
      this.root = $("timeline");
      this.nodes = /* @__PURE__ */ new Map();
      this.dirty = /* @__PURE__ */ new Set();
    }
    nearBottom() {
      const tl = this.root;
      return tl.scrollHeight - tl.scrollTop - tl.clientHeight < 80;
    }
    scrollDown() {
      this.root.scrollTop = this.root.scrollHeight;
    }
    /** Redraws every message. */
    all() {
      const st = this.mirror.st;
      const tl = this.root;
      tl.textContent = "";
      this.nodes.clear();
      this.dirty.clear();
      if (st.older) {
        const more = button("older", "Load " + Math.min(200, st.older) + " older messages (" + st.older + " in all)", this.on.loadOlder);
        more.id = "olderButton";
        tl.appendChild(more);
      }
      st.messages.forEach((m, i) => {
        const n = renderMessage(m, i, this.on);
        this.nodes.set(m.ts, n);
        tl.appendChild(n);
      });
      this.on.drawn();
      this.scrollDown();
    }
    /** Redraws every message, the view kept on what it showed (older messages came before it). */
    prepended() {
      const tl = this.root;
      const h0 = tl.scrollHeight;
      const top0 = tl.scrollTop;
      this.all();
      tl.scrollTop = top0 + (tl.scrollHeight - h0);
    }
    /** Redraws message ts at the next animation frame. */
    changed(ts) {
      if (this.dirty.size === 0) requestAnimationFrame(() => this.flush());
      this.dirty.add(ts);
    }
    flush() {
      const atBottom = this.nearBottom();
      const st = this.mirror.st;
      for (const ts of this.dirty) {
        const i = this.mirror.index(ts);
        if (i === void 0) continue;
        const n = renderMessage(st.messages[i], i, this.on);
        const old = this.nodes.get(ts);
        if (old) old.replaceWith(n);
        else this.insert(n, i);
        this.nodes.set(ts, n);
      }
      this.dirty.clear();
      this.on.drawn();
      if (atBottom) this.scrollDown();
    }
    // insert puts n, the article of message i, before the next one shown.
    insert(n, i) {
      const msgs = this.mirror.st.messages;
      let next = null;
      for (let j = i + 1; j < msgs.length && !next; j++) next = this.nodes.get(msgs[j].ts) || null;
      this.root.insertBefore(n, next);
    }
  };

  // src/state.js
  function emptyState() {
    return {
      sessionId: "",
      title: "",
      messages: [],
      older: 0,
      permissionMode: "",
      permissionModes: [],
      agentMode: "",
      agentModes: [],
      model: "",
      totals: {},
      kernelStatus: "starting",
      pendingAsk: null,
      mcpServers: []
    };
  }
  function takes(m, kind2) {
    return !!(m && m.answer && Array.isArray(m.answer.responses) && m.answer.responses.indexOf(kind2) >= 0);
  }
  var Mirror = class {
    constructor() {
      this.st = emptyState();
      this.pos = /* @__PURE__ */ new Map();
    }
    /** The message stamped ts, or undefined. */
    message(ts) {
      const i = this.pos.get(ts);
      return i === void 0 ? void 0 : this.st.messages[i];
    }
    /** The index of the message stamped ts, or undefined. */
    index(ts) {
      return this.pos.get(ts);
    }
    /** The transport went away: nothing is known to run. */
    disconnected() {
      this.st.kernelStatus = "disconnected";
    }
    reindex() {
      this.pos.clear();
      this.st.messages.forEach((m, i) => this.pos.set(m.ts, i));
    }
    // pending follows a message frame's word on the pending ask.
    pending(m, isPending) {
      if (isPending) this.st.pendingAsk = m;
      else if (this.st.pendingAsk && this.st.pendingAsk.ts === m.ts) this.st.pendingAsk = null;
    }
    apply(f) {
      const st = this.st;
      switch (f.type) {
        case "state":
          this.st = Object.assign(emptyState(), f.state);
          this.st.messages = this.st.messages || [];
          this.reindex();
          return { all: true };
        case "messageCreated": {
          const m = f.message;
          const i = this.pos.get(m.ts);
          this.pending(m, f.pending);
          if (i !== void 0) {
            st.messages[i] = m;
            return { ts: m.ts };
          }
          st.messages.push(m);
          const n = st.messages.length;
          if (n > 1 && st.messages[n - 2].ts > m.ts) {
            st.messages.sort((a, b) => a.ts - b.ts);
            this.reindex();
            return { all: true };
          }
          this.pos.set(m.ts, n - 1);
          return { ts: m.ts };
        }
        case "messageUpdated": {
          const ts = f.message ? f.message.ts : f.ts;
          const i = this.pos.get(ts);
          if (i === void 0) return {};
          if (f.message) {
            st.messages[i] = f.message;
            this.pending(f.message, f.pending);
          } else {
            const m = st.messages[i];
            if (f.append) m.text = (m.text || "") + f.append;
            if (f.appendReasoning) m.reasoning = (m.reasoning || "") + f.appendReasoning;
            if (f.partial) m.partial = true;
            else delete m.partial;
          }
          return { ts };
        }
        case "messagesRewound":
          st.messages = f.messages || [];
          st.older = f.older || 0;
          st.pendingAsk = f.pendingAsk || null;
          this.reindex();
          return { all: true };
        case "olderMessages": {
          const have = new Set(st.messages.map((m) => m.ts));
          st.messages = (f.messages || []).filter((m) => !have.has(m.ts)).concat(st.messages);
          st.older = f.older || 0;
          this.reindex();
          return { older: true };
        }
        case "kernelStatus":
          st.kernelStatus = f.status;
          return { chrome: true };
        case "tokenUsage": {
          const t = Object.assign({}, f.totals);
          if (!t.contextUsed && st.totals) {
            t.contextUsed = st.totals.contextUsed;
            t.contextWindow = st.totals.contextWindow;
          }
          st.totals = t;
          return { chrome: true };
        }
        case "settings":
          st.permissionMode = f.permissionMode;
          st.model = f.model;
          if (f.agentMode) st.agentMode = f.agentMode;
          if (f.title) st.title = f.title;
          return { chrome: true };
        case "mcpServers":
          st.mcpServers = f.servers || [];
          return { chrome: true };
        default:
          return { reply: f };
      }
    }
  };

  // src/chrome.js
  function showBanner(msg, kind2) {
    const b = $("banner");
    b.textContent = msg;
    b.className = "banner " + (kind2 || "");
    b.hidden = false;
    if (kind2 === "error") setTimeout(() => {
      if (b.textContent === msg) hideBanner();
    }, 8e3);
  }
  function hideBanner() {
    $("banner").hidden = true;
  }
  function totals(t) {
    const parts = [(t.inputTokens || 0) + " in", (t.outputTokens || 0) + " out", "$" + Number(t.cost || 0).toFixed(4)];
    if (t.contextUsed) {
      parts.push("context " + (t.contextWindow ? Math.round(100 * t.contextUsed / t.contextWindow) + "% of " + Math.round(t.contextWindow / 1e3) + "k" : t.contextUsed + " tokens"));
    }
    const box = $("totals");
    if (box.textContent === parts.join(" · ")) return;
    box.textContent = "";
    parts.forEach((p, i) => {
      if (i) box.appendChild(document.createTextNode(" "));
      box.appendChild(el("span", "", i < parts.length - 1 ? p + " ·" : p));
    });
  }
  function mcp(list) {
    const ul = $("mcpList");
    $("mcp").hidden = list.length === 0;
    const ready = list.filter((s) => s.state === "ready").length;
    $("mcpSummary").textContent = "MCP servers: " + ready + " of " + list.length + " ready";
    ul.textContent = "";
    for (const s of list) {
      const li = el("li", "mcp-server mcp-" + s.state.replace(/ /g, "-"));
      li.appendChild(el("strong", "", s.name));
      li.appendChild(el("span", "mcp-state", " " + s.state + (s.transport ? " · " + s.transport : "") + (s.scope ? " · " + s.scope : "")));
      if (s.where) li.appendChild(el("div", "mcp-where", s.where));
      if (s.error) li.appendChild(el("div", "mcp-error", s.error));
      if (s.tools && s.tools.length) li.appendChild(el("div", "mcp-tools", s.tools.join(", ")));
      ul.appendChild(li);
    }
  }
  var AskBox = class {
    constructor(respond2) {
      this.respond = respond2;
      this.shown = 0;
      this.placeholder = $("prompt").placeholder;
    }
    show(p) {
      const box = $("ask");
      if (!p) {
        if (this.shown) $("prompt").placeholder = this.placeholder;
        box.hidden = true;
        this.shown = 0;
        return;
      }
      box.hidden = false;
      if (this.shown === p.ts) return;
      this.shown = p.ts;
      const txt = $("askText");
      const sug = $("askSuggest");
      txt.textContent = "";
      sug.textContent = "";
      const approval = !!p.answer && p.answer.class === "interactive" && takes(p, "yesButtonClicked");
      const review = approval && !!askDiff(p);
      $("approve").hidden = !takes(p, "yesButtonClicked");
      $("approve").textContent = review ? "Accept" : approval ? "Approve" : p.ask === "api_req_failed" ? "Retry" : "Continue";
      $("alwaysAllow").hidden = !takes(p, "allowAll");
      $("alwaysAllow").textContent = review ? "Always" : "Always allow";
      $("alwaysAllow").title = review ? "Accept, and let the agent use " + ((parseJSON(p.text) || {}).tool || "this tool") + " without asking for the rest of the session" : "";
      $("deny").hidden = !takes(p, "noButtonClicked");
      $("deny").textContent = review ? "Reject" : approval ? "Deny" : "Stop";
      box.classList.toggle("review", review);
      box.dataset.ask = p.ask;
      box.dataset.ts = String(p.ts);
      if (p.ask === "followup") {
        const q = parseJSON(p.text) || { question: p.text };
        txt.appendChild(md(q.question));
        for (const s of q.suggest || []) sug.appendChild(button("suggestion", s, () => this.respond("messageResponse", s)));
      } else if (p.ask === "command") {
        txt.textContent = p.cell ? "Run cell " + p.cell + " of the notebook?" : "Run this code?";
      } else if (p.ask === "use_mcp_server") {
        const a = parseJSON(p.text) || {};
        txt.textContent = "Allow the MCP tool " + a.toolName + " of " + a.serverName + "?";
      } else if (review) {
        txt.appendChild(el("div", "", reviewTitle(p) + "?"));
        txt.appendChild(diffView(askDiff(p)));
      } else if (p.ask === "tool") {
        txt.textContent = "Allow this tool call?";
      } else if (p.ask === "completion_result") {
        txt.textContent = "Done. Send a follow-up to continue.";
      } else {
        txt.textContent = String(p.ask).replace(/_/g, " ");
      }
      if (takes(p, "messageResponse")) {
        $("prompt").placeholder = approval ? "Or type feedback to deny with a reason…" : "Type your answer…";
      } else {
        $("prompt").placeholder = this.placeholder;
      }
    }
  };
  function renderChrome(st, askBox2) {
    const s = $("status");
    s.textContent = st.kernelStatus || "idle";
    s.className = "status status-" + (st.kernelStatus || "idle");
    const title = $("title");
    title.textContent = st.title || (st.sessionId ? "Session " + st.sessionId.slice(0, 8) : "agentkernel");
    title.title = st.sessionId ? "Session " + st.sessionId : "";
    totals(st.totals || {});
    $("settingsBtn").title = "Model: " + (st.model || "none") + " · mode " + (st.agentMode || "code") + " · permissions " + (st.permissionMode || "default");
    $("cancel").disabled = !(st.kernelStatus === "busy" || st.kernelStatus === "waiting");
    mcp(st.mcpServers || []);
    askBox2.show(st.pendingAsk);
  }

  // src/dialogs.js
  function renderSessions(list, load) {
    const ul = $("sessionList");
    ul.textContent = "";
    $("searchHits").textContent = "";
    for (const s of list) {
      const li = el("li", s.current ? "current" : "");
      li.appendChild(button("link", s.title || s.id.slice(0, 8), () => load(s.id)));
      li.appendChild(el("div", "sub", new Date(s.updatedAt).toLocaleString() + " · " + s.messageCount + " messages" + (s.model ? " · " + s.model : "")));
      if (s.preview) li.appendChild(el("div", "sub preview", s.preview));
      ul.appendChild(li);
    }
    if (!list.length) ul.appendChild(el("li", "sub", "No sessions match."));
  }
  function renderHits(hits, load) {
    const ul = $("searchHits");
    ul.textContent = "";
    if (!hits.length) {
      ul.appendChild(el("li", "sub", "No messages match."));
      return;
    }
    for (const h of hits) {
      const li = el("li");
      li.appendChild(button("link", "Session " + h.sessionId.slice(0, 8), () => load(h.sessionId)));
      const snip = el("div", "sub");
      snip.appendChild(render(h.snippet));
      li.appendChild(snip);
      ul.appendChild(li);
    }
  }
  var RewindDialog = class {
    constructor() {
      this.ts = 0;
    }
    open(ts) {
      this.ts = ts;
      $("rwForce").checked = false;
      $("rewindDialog").hidden = false;
      $("rwDo").focus();
    }
    /** The choice, as a frame's rewind. */
    choice() {
      return { noFiles: !$("rwFiles").checked, noKernel: !$("rwKernel").checked, force: $("rwForce").checked };
    }
    close() {
      $("rewindDialog").hidden = true;
      this.ts = 0;
    }
  };
  function showRewindReport(r) {
    $("rwSummary").textContent = r.summary || "";
    const ul = $("rwConflicts");
    ul.textContent = "";
    for (const p of r.conflicts || []) ul.appendChild(el("li", "conflict", p));
    $("rewindReport").hidden = false;
  }

  // src/images.js
  var MAX_IMAGES = 4;
  var MAX_IMAGE_BYTES = 1 << 20;
  var MAX_EDGE = 1568;
  var IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];
  function urlBytes(u) {
    return Math.floor((u.length - u.indexOf(",") - 1) * 3 / 4);
  }
  function readFile(file) {
    return new Promise((resolve, reject) => {
      const r = new FileReader();
      r.onload = () => resolve(r.result);
      r.onerror = () => reject(new Error("could not read " + file.name));
      r.readAsDataURL(file);
    });
  }
  function loadImage(url) {
    return new Promise((resolve, reject) => {
      const img = new Image();
      img.onload = () => resolve(img);
      img.onerror = () => reject(new Error("not an image the browser can read"));
      img.src = url;
    });
  }
  async function fit(url) {
    const img = await loadImage(url);
    const w = img.naturalWidth;
    const h = img.naturalHeight;
    if (urlBytes(url) <= MAX_IMAGE_BYTES && Math.max(w, h) <= MAX_EDGE && SAFE_IMG.test(url)) return url;
    let scale = Math.min(1, MAX_EDGE / Math.max(w, h));
    for (let tries = 0; tries < 6; tries++, scale *= 0.7) {
      const c = document.createElement("canvas");
      c.width = Math.max(1, Math.round(w * scale));
      c.height = Math.max(1, Math.round(h * scale));
      const g = c.getContext("2d");
      g.fillStyle = "#fff";
      g.fillRect(0, 0, c.width, c.height);
      g.drawImage(img, 0, 0, c.width, c.height);
      let out = /^data:image\/png/.test(url) ? c.toDataURL("image/png") : "";
      if (!out || urlBytes(out) > MAX_IMAGE_BYTES) out = c.toDataURL("image/jpeg", 0.85);
      if (urlBytes(out) <= MAX_IMAGE_BYTES) return out;
    }
    throw new Error("too large even when scaled down");
  }
  function clipboardImages(dt) {
    const files = [];
    for (const it of dt && dt.items || []) {
      if (it.kind === "file" && IMAGE_TYPES.indexOf(it.type) >= 0) {
        const f = it.getAsFile();
        if (f) files.push(f);
      }
    }
    return files;
  }
  var Attachments = class {
    constructor(fail) {
      this.fail = fail;
      this.slots = [];
    }
    /** The data: URLs of the images ready to send. */
    ready() {
      return this.slots.filter((s) => s.url).map((s) => s.url);
    }
    /** Whether an image is still being read or scaled. */
    preparing() {
      return this.slots.some((s) => !s.url);
    }
    add(files) {
      for (const file of Array.from(files || [])) {
        if (IMAGE_TYPES.indexOf(file.type) < 0) {
          this.fail("Only PNG, JPEG, GIF and WebP images can be attached (" + (file.name || file.type || "file") + ").");
          continue;
        }
        if (this.slots.length >= MAX_IMAGES) {
          this.fail("Image " + (file.name || "") + " not attached: at most " + MAX_IMAGES + " images go with one message.");
          continue;
        }
        const slot = { url: null };
        this.slots.push(slot);
        readFile(file).then(fit).then((url) => {
          slot.url = url;
          this.render();
        }).catch((err) => {
          this.remove(slot);
          this.fail("Image " + (file.name || "") + " not attached: " + err.message + ".");
        });
      }
    }
    remove(slot) {
      const i = this.slots.indexOf(slot);
      if (i >= 0) this.slots.splice(i, 1);
      this.render();
    }
    clear() {
      this.slots = [];
      this.render();
    }
    render() {
      const box = $("attachments");
      box.textContent = "";
      this.slots.forEach((slot, i) => {
        if (!slot.url) return;
        const a = el("div", "attachment");
        const img = el("img");
        img.alt = "attached image " + (i + 1);
        img.src = slot.url;
        a.appendChild(img);
        const x = button("", "×", () => this.remove(slot));
        x.title = "Remove this image";
        x.setAttribute("aria-label", "remove attached image " + (i + 1));
        a.appendChild(x);
        box.appendChild(a);
      });
      box.hidden = this.ready().length === 0;
    }
  };

  // src/mentions.js
  var mentionAt = /(?:^|[\s(\[{"'])@([A-Za-z0-9_~][A-Za-z0-9_./~:-]*)?$/;
  var LIMIT = 20;
  var MentionList = class {
    /**
     * box is the prompt's textarea, list the element the list is drawn in,
     * send sends a client frame.
     */
    constructor(box, list, send2) {
      this.box = box;
      this.list = list;
      this.send = send2;
      this.prefix = null;
      this.asked = /* @__PURE__ */ new Set();
      this.items = [];
      this.active = 0;
      box.addEventListener("input", () => this.update());
      box.addEventListener("click", () => this.update());
      box.addEventListener("keyup", (e) => {
        if (e.key === "ArrowLeft" || e.key === "ArrowRight" || e.key === "Home" || e.key === "End") this.update();
      });
      box.addEventListener("blur", () => this.close());
    }
    /** Whether the list is shown. */
    get isOpen() {
      return !this.list.hidden;
    }
    // typed is the mention being typed at the caret: {start, prefix}, or null.
    typed() {
      const b = this.box;
      if (b.selectionStart !== b.selectionEnd) return null;
      const before = b.value.slice(0, b.selectionStart);
      const m = mentionAt.exec(before);
      if (!m) return null;
      const prefix = m[1] || "";
      return { start: before.length - prefix.length - 1, prefix };
    }
    /** update asks for the completions of the mention at the caret, if any. */
    update() {
      const t = this.typed();
      if (!t) {
        this.close();
        return;
      }
      if (t.prefix === this.prefix) return;
      this.prefix = t.prefix;
      const f = { type: "completeMention", prefix: t.prefix, limit: LIMIT };
      this.send(f);
      if (this.asked.size > 100) this.asked.clear();
      this.asked.add(f.id);
    }
    /**
     * quiet says whether an error frame answers one of this list's frames:
     * a list that cannot be had is no list, not a banner.
     */
    quiet(f) {
      return this.asked.delete(f.id);
    }
    /** show draws a mentionCompletions frame, if it answers what is typed. */
    show(f) {
      const t = this.typed();
      if (!t || f.prefix !== t.prefix || document.activeElement !== this.box) return;
      this.items = (Array.isArray(f.completions) ? f.completions : []).filter((c) => c && typeof c.mention === "string");
      this.active = 0;
      if (!this.items.length) {
        this.list.hidden = true;
        return;
      }
      this.draw();
      this.list.hidden = false;
    }
    draw() {
      this.list.replaceChildren();
      this.items.forEach((c, i) => {
        const li = el("li", "mention" + (i === this.active ? " active" : ""));
        li.id = "mention-" + i;
        li.setAttribute("role", "option");
        li.setAttribute("aria-selected", String(i === this.active));
        li.dataset.kind = String(c.kind || "");
        li.append(el("span", "mention-name", "@" + c.mention), el("span", "mention-detail", String(c.detail || "")));
        li.addEventListener("mousedown", (e) => {
          e.preventDefault();
          this.pick(i);
        });
        this.list.append(li);
      });
      this.box.setAttribute("aria-activedescendant", "mention-" + this.active);
      const a = this.list.children[this.active];
      if (a && a.scrollIntoView) a.scrollIntoView({ block: "nearest" });
    }
    /**
     * keydown handles the list's keys while it is shown; it returns true
     * when it took the key (the box's own Enter does not send then).
     */
    keydown(e) {
      if (!this.isOpen || e.isComposing) return false;
      const n = this.items.length;
      switch (e.key) {
        case "ArrowDown":
          this.active = (this.active + 1) % n;
          break;
        case "ArrowUp":
          this.active = (this.active + n - 1) % n;
          break;
        case "Enter":
        case "Tab":
          if (e.shiftKey) return false;
          this.pick(this.active);
          break;
        case "Escape":
          this.close();
          break;
        default:
          return false;
      }
      e.preventDefault();
      e.stopPropagation();
      if (this.isOpen) this.draw();
      return true;
    }
    /** pick puts completion i in place of the mention being typed. */
    pick(i) {
      const c = this.items[i];
      const t = this.typed();
      if (!c || !t) {
        this.close();
        return;
      }
      const b = this.box;
      const into = c.kind === "dir";
      const text2 = "@" + c.mention + (into ? "" : " ");
      const end = t.start + 1 + t.prefix.length;
      b.value = b.value.slice(0, t.start) + text2 + b.value.slice(end);
      const caret = t.start + text2.length;
      b.setSelectionRange(caret, caret);
      this.close();
      if (into) this.update();
    }
    /** close hides the list; the next mention typed asks again. */
    close() {
      this.list.hidden = true;
      this.list.replaceChildren();
      this.items = [];
      this.prefix = null;
      this.box.removeAttribute("aria-activedescendant");
    }
  };

  // src/settings.js
  var SettingsView = class {
    constructor(send2) {
      this.send = send2;
      this.rows = /* @__PURE__ */ new Map();
      this.current = null;
    }
    get isOpen() {
      return !$("settingsView").hidden;
    }
    /** Shows or hides the view; shown, it asks the kernel for its content. */
    toggle(show) {
      $("settingsView").hidden = !show;
      $("settingsBtn").setAttribute("aria-expanded", String(show));
      if (show) this.refresh();
    }
    refresh() {
      this.send({ type: "getSettings" });
    }
    /** Draws a modelSettings frame f; st is the mirror's state (modes). */
    render(f, st) {
      this.current = f;
      const pick = $("svModel");
      const models = (f.models || []).slice();
      if (f.model && models.indexOf(f.model) < 0) models.unshift(f.model);
      if (pick.dataset.models !== models.join(",")) {
        pick.textContent = "";
        if (!f.model) pick.appendChild(option("", "— no model —"));
        for (const m of models) pick.appendChild(option(m, m));
        pick.dataset.models = models.join(",");
      }
      if (document.activeElement !== pick) pick.value = f.model || "";
      $("svModelNote").textContent = f.model ? "Prompts use " + f.model + "; inline completions use " + (f.completionModel || "the same model") + "." : "No model yet: pick one, with its key below.";
      fill($("svEffort"), f.efforts || [], f.effort || "default");
      this.modes(st);
      this.keys(f);
    }
    /** The agent mode and the permissions, as the mirror knows them. */
    modes(st) {
      if (!st) return;
      fill($("svAgentMode"), st.agentModes && st.agentModes.length ? st.agentModes : [st.agentMode || "code"], st.agentMode || "code");
      fill($("svMode"), st.permissionModes && st.permissionModes.length ? st.permissionModes : [st.permissionMode], st.permissionMode);
    }
    keys(f) {
      const list = $("svKeys");
      for (const p of f.providers || []) {
        let r = this.rows.get(p.name);
        if (!r) {
          r = this.row(p);
          this.rows.set(p.name, r);
          list.appendChild(r.li);
        }
        r.li.dataset.source = p.source || "none";
        r.li.dataset.urlSource = p.urlSource || "none";
        if (r.status) {
          r.status.textContent = keyStatus(p);
          r.remove.hidden = p.source !== "file" && !p.shadowed;
        }
        r.urlStatus.textContent = urlStatus(p);
        r.urlRemove.hidden = p.urlSource !== "file" && !p.urlShadowed;
      }
      const where = $("svKeysFile");
      where.textContent = f.keysFile ? "Keys and server URLs are saved in " + f.keysFile + ", which only you can read. An environment variable wins over a saved one." : "Keys and server URLs cannot be saved by this kernel.";
      const problem = $("svKeysProblem");
      problem.textContent = f.keysProblem || "";
      problem.hidden = !f.keysProblem;
    }
    /** A provider's row: its key (when it takes one) and its base URL. */
    row(p) {
      const r = { li: el("li", "key-row") };
      r.li.dataset.provider = p.name;
      r.li.appendChild(el("strong", "", p.name));
      if (p.env) {
        r.status = el("div", "sub key-status");
        r.li.appendChild(r.status);
        const row2 = el("div", "row");
        r.input = field("key-input", "password", p.env + " for " + p.name, "API key for " + p.name, () => this.saveKey(p.name));
        r.save = button("primary key-save", "Save key", () => this.saveKey(p.name));
        r.remove = button("key-remove", "Remove", () => this.send({ type: "setKey", provider: p.name, key: "" }));
        row2.append(r.input, r.save, r.remove);
        r.li.appendChild(row2);
      }
      r.urlStatus = el("div", "sub url-status");
      r.li.appendChild(r.urlStatus);
      const row = el("div", "row");
      r.url = field(
        "url-input",
        "url",
        URL_HINT[p.name] || "http://host:port",
        p.name === "ollama" ? "Ollama host" : "Base URL for " + p.name,
        () => this.saveURL(p.name)
      );
      r.urlSave = button("url-save", p.name === "ollama" ? "Save host" : "Save URL", () => this.saveURL(p.name));
      r.urlRemove = button("url-remove", "Default", () => this.send({ type: "setBaseURL", provider: p.name, url: "" }));
      r.urlRemove.title = "Remove the saved URL: the provider's default server";
      row.append(r.url, r.urlSave, r.urlRemove);
      r.li.appendChild(row);
      return r;
    }
    /** Sends the typed base URL of provider. */
    saveURL(provider) {
      const r = this.rows.get(provider);
      if (!r) return;
      const url = r.url.value.trim();
      if (!url) return;
      r.url.value = "";
      this.send({ type: "setBaseURL", provider, url });
    }
    /** Sends the typed key of provider and empties its field at once. */
    saveKey(provider) {
      const r = this.rows.get(provider);
      if (!r) return;
      const key = r.input.value.trim();
      r.input.value = "";
      if (!key) return;
      this.send({ type: "setKey", provider, key });
    }
    /** Uses the picked model, or the one typed beside the picker. */
    useModel() {
      const other = $("svModelOther").value.trim();
      const model = other || $("svModel").value;
      if (!model) return;
      $("svModelOther").value = "";
      this.send({ type: "setModel", model });
    }
  };
  var URL_HINT = {
    openai: "Server URL, e.g. http://localhost:8000/v1 (vLLM, llama.cpp, LM Studio, a LiteLLM proxy)",
    anthropic: "Server URL, e.g. https://proxy.example.com (a proxy of the Anthropic API)",
    ollama: "Ollama host, e.g. http://localhost:11434"
  };
  var onEnter = (fn) => (e) => {
    if (e.key === "Enter" && !e.isComposing) {
      e.preventDefault();
      fn();
    }
  };
  function field(cls, type, placeholder, label, enter2) {
    const f = el("input", cls);
    f.type = type;
    f.autocomplete = "off";
    f.spellcheck = false;
    f.placeholder = placeholder;
    f.setAttribute("aria-label", label);
    f.addEventListener("keydown", onEnter(enter2));
    return f;
  }
  function option(value, text2) {
    const o = el("option", "", text2);
    o.value = value;
    return o;
  }
  function fill(sel, values, value) {
    if (sel.dataset.values !== values.join(",")) {
      sel.textContent = "";
      for (const v of values) sel.appendChild(option(v, v));
      sel.dataset.values = values.join(",");
    }
    if (document.activeElement !== sel) sel.value = value;
  }
  function keyStatus(p) {
    switch (p.source) {
      case "environment":
        return "From the environment (" + p.env + "): " + p.mask + (p.shadowed ? ". A saved key is hidden by it." : ".");
      case "file":
        return "Saved: " + p.mask + ".";
      default:
        return "No key.";
    }
  }
  function urlStatus(p) {
    switch (p.urlSource) {
      case "environment":
        return "Server: " + p.url + " (from " + p.urlEnv + (p.urlShadowed ? "; a saved URL is hidden by it)." : ").");
      case "file":
        return "Server: " + p.url + " (saved).";
      default:
        return p.name === "ollama" ? "Server: http://localhost:11434 (the default)." : "Server: the provider's own (the default).";
    }
  }

  // src/theme.js
  var THEME_FUNCTIONS = /^(rgba?|hsla?|hwb|lab|lch|oklab|oklch|color|color-mix|calc|min|max|clamp)$/i;
  function plainValue(v) {
    if (typeof v !== "string" || v.length > 500 || v.indexOf("\\") >= 0) return false;
    const re = /([a-z0-9_-]+)\s*\(/gi;
    let m;
    while (m = re.exec(v)) if (!THEME_FUNCTIONS.test(m[1])) return false;
    return true;
  }
  function applyTheme(t) {
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

  // src/transport.js
  var PROTOCOL = 3;
  function decode(text2) {
    let data;
    try {
      data = JSON.parse(text2);
    } catch (e) {
      return [];
    }
    const frames = Array.isArray(data) ? data : [data];
    for (const f of frames) if (!f || f.v !== PROTOCOL) return null;
    return frames;
  }
  function socketTransport(token, h) {
    let ws = null;
    let retry = 0;
    const connect = () => {
      const proto = location.protocol === "https:" ? "wss:" : "ws:";
      ws = new WebSocket(proto + "//" + location.host + "/ws?token=" + encodeURIComponent(token));
      ws.onopen = () => {
        retry = 0;
        h.open();
      };
      ws.onmessage = (ev) => h.message(ev.data);
      ws.onclose = (ev) => {
        let why = ev.reason ? " (" + ev.reason + ")" : "";
        if (ev.code === 1008 && !ev.reason) why = " (refused: check the URL's token)";
        h.closed("Disconnected" + why + "; reconnecting…");
        setTimeout(connect, Math.min(1e4, 250 * Math.pow(2, retry++)));
      };
    };
    connect();
    return {
      send(text2) {
        if (!ws || ws.readyState !== WebSocket.OPEN) return false;
        ws.send(text2);
        return true;
      }
    };
  }
  function parentTransport(h) {
    let open = false;
    window.addEventListener("message", (ev) => {
      const d = ev.data;
      if (ev.source !== window.parent || !d || typeof d !== "object") return;
      if (d.akTheme && typeof d.akTheme === "object") h.theme(d.akTheme);
      if (d.akStatus === "open") {
        open = true;
        h.open();
      }
      if (d.akStatus === "closed") {
        open = false;
        h.closed(d.reason || "No agent kernel: open a notebook on an Agent kernel.");
      }
      if (typeof d.akFrames === "string") h.message(d.akFrames);
      if (d.akShow === "settings") h.settings();
    });
    window.parent.postMessage({ akReady: true }, "*");
    return {
      send(text2) {
        if (!open) return false;
        window.parent.postMessage({ akFrame: text2 }, "*");
        return true;
      }
    };
  }

  // src/main.js
  var mirror = new Mirror();
  var rewind = new RewindDialog();
  var attachments = new Attachments((text2) => showBanner(text2, "error"));
  var transport = null;
  var nextId = 1;
  var editingTS = 0;
  var loadingOlder = false;
  function send(frame) {
    frame.v = PROTOCOL;
    frame.id = "c" + nextId++;
    if (!transport || !transport.send(JSON.stringify(frame))) showBanner("Not connected.", "warn");
  }
  function respond(kind2, text2, images) {
    const p = mirror.st.pendingAsk;
    if (!p) return;
    const f = { type: "askResponse", ts: p.ts, response: kind2 };
    if (text2) f.text = text2;
    if (images && images.length) f.images = images;
    send(f);
  }
  var askBox = new AskBox(respond);
  var settingsView = new SettingsView(send);
  var mentions = new MentionList($("prompt"), $("mentionList"), send);
  var chrome = () => renderChrome(mirror.st, askBox);
  function loadOlder() {
    const st = mirror.st;
    if (loadingOlder || !st.older || !st.messages.length) return;
    loadingOlder = true;
    send({ type: "loadOlder", ts: st.messages[0].ts, limit: 200 });
  }
  function startEdit(m) {
    editingTS = m.ts;
    $("prompt").value = m.text || "";
    $("editing").hidden = false;
    $("prompt").focus();
  }
  function stopEdit() {
    editingTS = 0;
    $("editing").hidden = true;
  }
  function openSettings() {
    toggleSessions(false);
    settingsView.toggle(true);
  }
  var timeline = new Timeline(mirror, { rewind: (ts) => rewind.open(ts), edit: startEdit, loadOlder, drawn: chrome, settings: openSettings });
  function loadSession(id) {
    send({ type: "loadSession", sessionId: id });
    toggleSessions(false);
  }
  function receive(text2) {
    const frames = decode(text2);
    if (!frames) {
      showBanner("The kernel speaks another panel protocol version; reload the page.", "error");
      return;
    }
    for (const f of frames) {
      const c = mirror.apply(f);
      if (c.all) timeline.all();
      else if (c.older) {
        loadingOlder = false;
        timeline.prepended();
      } else if (c.ts !== void 0) timeline.changed(c.ts);
      else if (c.chrome) {
        chrome();
        settingsView.modes(mirror.st);
        if (f.type === "settings" && settingsView.isOpen) settingsView.refresh();
      } else if (c.reply) reply(c.reply);
    }
  }
  function reply(f) {
    switch (f.type) {
      case "sessions":
        renderSessions(f.sessions || [], loadSession);
        break;
      case "searchResults":
        renderHits(f.hits || [], loadSession);
        break;
      case "rewindReport":
        showRewindReport(f.report || {});
        break;
      case "modelSettings":
        settingsView.render(f, mirror.st);
        break;
      case "mentionCompletions":
        mentions.show(f);
        break;
      case "error":
        if (mentions.quiet(f)) break;
        showBanner(f.text || f.code, "error");
        break;
    }
  }
  var handlers = {
    open() {
      hideBanner();
      if (settingsView.isOpen) settingsView.refresh();
    },
    closed(reason) {
      mirror.disconnected();
      chrome();
      showBanner(reason, "warn");
    },
    message: receive,
    theme: applyTheme,
    settings: openSettings
  };
  function submitPrompt() {
    const text2 = $("prompt").value.trim();
    const images = attachments.ready();
    if (attachments.preparing()) {
      showBanner("An image is still being prepared: send again in a moment.", "error");
      return;
    }
    if (!text2) {
      if (images.length) showBanner("Add a few words to go with the image.", "error");
      return;
    }
    if (editingTS) {
      if (images.length) {
        showBanner("An edit cannot carry images: send them with a new message.", "error");
        return;
      }
      send({ type: "editMessage", ts: editingTS, text: text2 });
    } else if (takes(mirror.st.pendingAsk, "messageResponse")) {
      respond("messageResponse", text2, images);
    } else {
      const f = { type: "newTask", text: text2 };
      if (images.length) f.images = images;
      send(f);
    }
    $("prompt").value = "";
    mentions.close();
    attachments.clear();
    stopEdit();
  }
  function toggleSessions(show) {
    if (show) settingsView.toggle(false);
    $("sessions").hidden = !show;
    $("sessionsBtn").setAttribute("aria-expanded", String(show));
    if (show) send({ type: "listSessions", search: $("sessionQuery").value.trim() });
  }
  function searchSessions() {
    const q = $("sessionQuery").value.trim();
    send({ type: "listSessions", search: q });
    if (q) send({ type: "searchMessages", query: q });
  }
  var on = (id, event, fn) => $(id).addEventListener(event, fn);
  var enter = (fn) => (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      fn();
    }
  };
  on("attach", "click", () => $("attachFile").click());
  on("attachFile", "change", (e) => {
    attachments.add(e.target.files);
    e.target.value = "";
  });
  on("prompt", "paste", (e) => {
    const files = clipboardImages(e.clipboardData);
    if (!files.length) return;
    if (!e.clipboardData.getData("text/plain")) e.preventDefault();
    attachments.add(files);
  });
  on("composer", "dragover", (e) => {
    if (e.dataTransfer && Array.from(e.dataTransfer.types || []).indexOf("Files") >= 0) {
      e.preventDefault();
      $("composer").classList.add("dropping");
    }
  });
  on("composer", "dragleave", () => $("composer").classList.remove("dropping"));
  on("composer", "drop", (e) => {
    $("composer").classList.remove("dropping");
    if (!e.dataTransfer || !e.dataTransfer.files.length) return;
    e.preventDefault();
    attachments.add(e.dataTransfer.files);
  });
  on("send", "click", submitPrompt);
  var sendOnEnter = enter(submitPrompt);
  on("prompt", "keydown", (e) => {
    if (!mentions.keydown(e)) sendOnEnter(e);
  });
  on("cancel", "click", () => send({ type: "cancelTask" }));
  on("cancelEdit", "click", () => {
    $("prompt").value = "";
    stopEdit();
  });
  on("rwDo", "click", () => {
    if (rewind.ts) send({ type: "deleteMessage", ts: rewind.ts, rewind: rewind.choice() });
    rewind.close();
  });
  on("rwFork", "click", () => {
    if (rewind.ts) send({ type: "forkSession", ts: rewind.ts, rewind: rewind.choice() });
    rewind.close();
  });
  on("rwCancel", "click", () => rewind.close());
  on("rwClose", "click", () => {
    $("rewindReport").hidden = true;
  });
  on("approve", "click", () => respond("yesButtonClicked"));
  on("alwaysAllow", "click", () => respond("allowAll"));
  on("deny", "click", () => respond("noButtonClicked"));
  on("timeline", "scroll", (e) => {
    if (e.target.scrollTop < 40) loadOlder();
  });
  on("sessionsBtn", "click", () => toggleSessions($("sessions").hidden));
  on("settingsBtn", "click", () => settingsView.isOpen ? settingsView.toggle(false) : openSettings());
  on("svUseModel", "click", () => settingsView.useModel());
  on("svModelOther", "keydown", enter(() => settingsView.useModel()));
  on("svEffort", "change", (e) => send({ type: "setEffort", effort: e.target.value }));
  on("svAgentMode", "change", (e) => send({ type: "setAgentMode", agentMode: e.target.value }));
  on("svMode", "change", (e) => send({ type: "setPermissionMode", permissionMode: e.target.value }));
  on("sessionSearchBtn", "click", searchSessions);
  on("sessionQuery", "keydown", (e) => {
    if (e.key === "Enter" && !e.isComposing) {
      e.preventDefault();
      searchSessions();
    }
  });
  if (window.AK_TRANSPORT === "postmessage") {
    transport = parentTransport(handlers);
  } else {
    const token = new URLSearchParams(location.search).get("token") || "";
    if (token) transport = socketTransport(token, handlers);
    else showBanner("This page needs the URL with its token: run %agent webview in the notebook.", "error");
  }
})();
