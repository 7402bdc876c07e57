// agentkernel web panel: mirrors one agent session and sends commands back,
// over the panel's WebSocket or, in the JupyterLab sidebar, through its
// host page (window.AK_TRANSPORT = "postmessage": the page relays frames to
// and from the kernel's comm). Protocol: docs/webview-protocol.md.
// No frameworks, no build step. Model text goes through AKMarkdown, which
// builds DOM nodes and never parses HTML; everything else is set with
// textContent.
(function () {
  "use strict";

  var PROTOCOL = 3;
  var params = new URLSearchParams(location.search);
  var token = params.get("token") || "";
  var $ = function (id) { return document.getElementById(id); };

  // The mirrored state, changed only by frames (apply). Which ask is
  // pending, and how an ask is answered, the frames say (webview/asks.go).
  var st = { sessionId: "", messages: [], mode: "", modes: [], model: "", totals: {}, kernelStatus: "starting", pendingAsk: null };
  var pos = {}; // ts → index
  var nodes = {}; // ts → element
  var dirty = {}; // ts → true: re-render at the next frame
  var ws = null, retry = 0, nextId = 1, editingTS = 0, connected = false;
  window.__akPanel = { state: function () { return st; }, frames: 0 };

  // trackAsk follows a message frame's word on the pending ask.
  function trackAsk(m, pending) {
    if (pending) st.pendingAsk = m;
    else if (st.pendingAsk && st.pendingAsk.ts === m.ts) st.pendingAsk = null;
  }

  // takes reports whether ask m takes the answer kind (its answer's responses).
  function takes(m, kind) {
    return !!(m && m.answer && m.answer.responses && m.answer.responses.indexOf(kind) >= 0);
  }

  function reindex() {
    pos = {};
    st.messages.forEach(function (m, i) { pos[m.ts] = i; });
  }

  function apply(f) {
    window.__akPanel.frames++;
    switch (f.type) {
      case "state":
        st = f.state;
        st.messages = st.messages || [];
        reindex();
        renderAll();
        break;
      case "messageCreated":
        if (pos[f.message.ts] !== undefined) st.messages[pos[f.message.ts]] = f.message;
        else {
          st.messages.push(f.message);
          if (st.messages.length > 1 && st.messages[st.messages.length - 2].ts > f.message.ts) {
            st.messages.sort(function (a, b) { return a.ts - b.ts; });
            reindex();
            trackAsk(f.message, f.pending);
            renderAll();
            break;
          }
          pos[f.message.ts] = st.messages.length - 1;
        }
        trackAsk(f.message, f.pending);
        markDirty(f.message.ts);
        break;
      case "messageUpdated":
        var ts = f.message ? f.message.ts : f.ts;
        var i = pos[ts];
        if (i === undefined) break;
        if (f.message) {
          st.messages[i] = f.message;
          trackAsk(f.message, f.pending);
        } else {
          var m = st.messages[i];
          if (f.append) m.text = (m.text || "") + f.append;
          if (f.appendReasoning) m.reasoning = (m.reasoning || "") + f.appendReasoning;
          if (f.partial) m.partial = true; else delete m.partial;
        }
        markDirty(ts);
        break;
      case "messagesRewound":
        st.messages = f.messages || [];
        st.older = f.older || 0;
        st.pendingAsk = f.pendingAsk || null;
        reindex();
        renderAll();
        break;
      case "kernelStatus":
        st.kernelStatus = f.status;
        break;
      case "tokenUsage":
        // The context's fill is known after a request; keep the last one.
        if (!f.totals.contextUsed && st.totals) { f.totals.contextUsed = st.totals.contextUsed; f.totals.contextWindow = st.totals.contextWindow; }
        st.totals = f.totals;
        break;
      case "settings":
        st.mode = f.mode; st.model = f.model;
        if (f.agentMode) st.agentMode = f.agentMode;
        if (f.title) st.title = f.title;
        break;
      case "mcpServers":
        st.mcpServers = f.servers || [];
        break;
      case "sessions":
        renderSessions(f.sessions);
        return;
      case "searchResults":
        renderHits(f.hits);
        return;
      case "olderMessages":
        // A page of older messages, before those shown: prepended, the
        // view kept where it was.
        loadingOlder = false;
        var tl0 = $("timeline"), h0 = tl0.scrollHeight, top0 = tl0.scrollTop;
        var have = {};
        st.messages.forEach(function (m) { have[m.ts] = true; });
        st.messages = (f.messages || []).filter(function (m) { return !have[m.ts]; }).concat(st.messages);
        st.older = f.older || 0;
        reindex();
        renderAll();
        tl0.scrollTop = top0 + (tl0.scrollHeight - h0);
        return;
      case "error":
        showBanner(f.text || f.code, "error");
        return;
      case "ack":
        return;
      case "rewindReport":
        showRewindReport(f.report || {});
        return;
    }
    renderChrome();
  }

  // ---- connection ----

  // receive takes one message of the kernel's: a frame, or a batch.
  function receive(text) {
    var data;
    try { data = JSON.parse(text); } catch (e) { return; }
    var frames = Array.isArray(data) ? data : [data]; // a batch, or one frame
    for (var i = 0; i < frames.length; i++) {
      var f = frames[i];
      if (!f || f.v !== PROTOCOL) { showBanner("The kernel speaks another panel protocol version; reload the page.", "error"); return; }
      apply(f);
    }
  }

  // The sidebar's transport: the host page opens the comm and relays. It
  // says {akStatus: "open" | "closed", reason}, {akFrames: TEXT} and
  // {akTheme: THEME}; we send {akReady: true}, then {akFrame: TEXT}. Only
  // messages from the parent window count.
  var viaParent = window.AK_TRANSPORT === "postmessage";
  function connectParent() {
    window.addEventListener("message", function (ev) {
      if (ev.source !== window.parent || !ev.data || typeof ev.data !== "object") return;
      if (ev.data.akTheme && typeof ev.data.akTheme === "object") applyTheme(ev.data.akTheme);
      if (ev.data.akStatus === "open") { connected = true; hideBanner(); }
      if (ev.data.akStatus === "closed") {
        connected = false;
        st.kernelStatus = "disconnected";
        renderChrome();
        showBanner(ev.data.reason || "No agent kernel: open a notebook on an Agent kernel.", "warn");
      }
      if (typeof ev.data.akFrames === "string") receive(ev.data.akFrames);
    });
    window.parent.postMessage({ akReady: true }, "*");
  }

  // applyTheme wears JupyterLab's theme, {light, vars: {"--jp-…": value}}:
  // the values on this page's root, which panel.css uses under
  // [data-jp-theme]; the previous theme's go first. Only --jp-* names, and
  // values of colours, sizes and font names: a value with any other CSS
  // function (url(), image-set(), …) or an escape is dropped, so the theme
  // loads nothing into the page.
  var THEME_FUNCTIONS = /^(rgba?|hsla?|hwb|lab|lch|oklab|oklch|color|color-mix|calc|min|max|clamp)$/i;
  function plainValue(v) {
    if (typeof v !== "string" || v.length > 500 || v.indexOf("\\") >= 0) return false;
    var re = /([a-z0-9_-]+)\s*\(/gi, m;
    while ((m = re.exec(v))) if (!THEME_FUNCTIONS.test(m[1])) return false;
    return true;
  }
  function applyTheme(t) {
    var root = document.documentElement, vars = t.vars && typeof t.vars === "object" ? t.vars : {};
    for (var i = root.style.length - 1; i >= 0; i--) {
      if (root.style[i].indexOf("--jp-") === 0) root.style.removeProperty(root.style[i]);
    }
    Object.keys(vars).forEach(function (name) {
      if (/^--jp-[a-z0-9-]+$/.test(name) && plainValue(vars[name])) root.style.setProperty(name, vars[name]);
    });
    root.setAttribute("data-jp-theme", t.light === false ? "dark" : "light");
  }

  function connect() {
    var proto = location.protocol === "https:" ? "wss:" : "ws:";
    ws = new WebSocket(proto + "//" + location.host + "/ws?token=" + encodeURIComponent(token));
    ws.onopen = function () { retry = 0; connected = true; hideBanner(); };
    ws.onmessage = function (ev) { receive(ev.data); };
    ws.onclose = function (ev) {
      connected = false;
      st.kernelStatus = "disconnected";
      renderChrome();
      var why = ev.reason ? " (" + ev.reason + ")" : "";
      if (ev.code === 1008 && !ev.reason) why = " (refused: check the URL's token)";
      var delay = Math.min(10000, 250 * Math.pow(2, retry++));
      showBanner("Disconnected" + why + "; reconnecting…", "warn");
      setTimeout(connect, delay);
    };
  }

  function send(frame) {
    frame.v = PROTOCOL;
    frame.id = "c" + (nextId++);
    if (viaParent) {
      if (!connected) { showBanner("Not connected.", "warn"); return; }
      window.parent.postMessage({ akFrame: JSON.stringify(frame) }, "*");
      return;
    }
    if (!ws || ws.readyState !== WebSocket.OPEN) { showBanner("Not connected.", "warn"); return; }
    ws.send(JSON.stringify(frame));
  }

  // ---- rendering ----

  function markDirty(ts) {
    var first = Object.keys(dirty).length === 0;
    dirty[ts] = true;
    if (first) requestAnimationFrame(flush);
  }

  function flush() {
    var atBottom = nearBottom();
    Object.keys(dirty).forEach(function (k) {
      var ts = Number(k), i = pos[ts];
      delete dirty[k];
      if (i === undefined) return;
      var n = renderMessage(st.messages[i], i);
      if (nodes[ts]) nodes[ts].replaceWith(n);
      else insertNode(n, i);
      nodes[ts] = n;
    });
    renderChrome();
    if (atBottom) scrollDown();
  }

  function insertNode(n, i) {
    var tl = $("timeline");
    var next = null;
    for (var j = i + 1; j < st.messages.length; j++) {
      if (nodes[st.messages[j].ts]) { next = nodes[st.messages[j].ts]; break; }
    }
    tl.insertBefore(n, next);
  }

  // loadOlder asks for the page of messages before the oldest shown.
  var loadingOlder = false;
  function loadOlder() {
    if (loadingOlder || !st.older || !st.messages.length) return;
    loadingOlder = true;
    send({ type: "loadOlder", ts: st.messages[0].ts, limit: 200 });
  }

  function renderAll() {
    var tl = $("timeline");
    tl.textContent = "";
    nodes = {}; dirty = {};
    if (st.older) {
      var more = el("button", "older", "Load " + Math.min(200, st.older) + " older messages (" + st.older + " in all)");
      more.id = "olderButton";
      more.addEventListener("click", loadOlder);
      tl.appendChild(more);
    }
    st.messages.forEach(function (m, i) {
      var n = renderMessage(m, i);
      nodes[m.ts] = n;
      tl.appendChild(n);
    });
    renderChrome();
    scrollDown();
  }

  function nearBottom() {
    var tl = $("timeline");
    return tl.scrollHeight - tl.scrollTop - tl.clientHeight < 80;
  }
  function scrollDown() { var tl = $("timeline"); tl.scrollTop = tl.scrollHeight; }

  function el(tag, cls, txt) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (txt !== undefined && txt !== null) e.textContent = txt;
    return e;
  }

  function parseJSON(s) { try { return JSON.parse(s); } catch (e) { return null; } }

  function isUserPrompt(m, i) {
    return m.type === "say" && (m.say === "user_feedback" || (m.say === "text" && i === 0));
  }

  var SAFE_IMG = /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+\/=\s]+$/;

  function renderMessage(m, i) {
    var box = el("article", "msg");
    box.dataset.ts = String(m.ts);
    box.dataset.kind = m.type + ":" + (m.ask || m.say);
    if (m.partial) box.classList.add("partial");
    var body = el("div", "body");
    var kind = m.ask || m.say;
    if (m.type === "say") {
      switch (kind) {
        case "text":
          if (isUserPrompt(m, i)) { box.classList.add("user"); body.appendChild(el("div", "plain", m.text)); }
          else { box.classList.add("model"); body.appendChild(md(m.text)); }
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
        case "error": case "diff_error": case "condense_context_error":
          box.classList.add("error");
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
        case "mcp_server_request_started":
          box.classList.add("meta");
          var r = parseJSON(m.text) || {};
          body.appendChild(el("span", "", "MCP " + (r.serverName || "") + " · " + (r.toolName || "") +
            (m.progressStatus && m.progressStatus.text ? " · " + m.progressStatus.text : "")));
          break;
        case "mcp_server_response":
          box.classList.add("output");
          body.appendChild(el("div", "label", "MCP result"));
          body.appendChild(el("pre", "out", m.text || "(no output)"));
          break;
        case "api_req_started":
          box.classList.add("meta");
          body.appendChild(el("span", "", m.partial ? "Asking the model…" : "Model request"));
          break;
        case "tool_result":
          box.classList.add("meta");
          var tr = parseJSON(m.text) || {};
          body.appendChild(el("span", "", (tr.ok ? "✓ " : "✗ ") + (tr.tool || "tool") + ": " + (tr.summary || "")));
          if (tr.diff) body.appendChild(el("pre", "diff", tr.diff));
          break;
        case "api_req_finished":
          box.classList.add("meta");
          var u = parseJSON(m.text) || {};
          body.appendChild(el("span", "", "↳ " + (u.model ? u.model + " · " : "") + (u.tokensIn || 0) + " in · " + (u.tokensOut || 0) + " out tokens · $" + Number(u.cost || 0).toFixed(4) +
            (u.latencyMs != null ? " · first token " + (u.latencyMs / 1000).toFixed(2) + " s" : "") + (u.durationMs != null ? " · " + (u.durationMs / 1000).toFixed(1) + " s" : "")));
          break;
        case "api_req_retried": case "api_req_retry_delayed": case "condense_context": case "sliding_window_truncation": case "kernel_status": case "checkpoint_saved":
          box.classList.add("meta");
          body.appendChild(el("span", "", kind.replace(/_/g, " ") + (m.text ? ": " + m.text : "")));
          break;
        default:
          body.appendChild(el("div", "plain", m.text));
      }
      if (m.reasoning && kind !== "reasoning") body.insertBefore(reasoning(m.reasoning, m.partial), body.firstChild);
    } else {
      box.classList.add("askmsg");
      if (m.isAnswered) box.classList.add("answered");
      body.appendChild(askBody(m));
    }
    (m.images || []).forEach(function (src) {
      if (!SAFE_IMG.test(src)) return;
      var img = el("img", "image");
      img.alt = kind === "text" || kind === "user_feedback" ? "attached image" : "output image";
      img.src = src;
      body.appendChild(img);
    });
    box.appendChild(body);
    box.appendChild(actions(m, i));
    return box;
  }

  function md(s) {
    var d = el("div", "markdown");
    d.appendChild(window.AKMarkdown.render(s || ""));
    return d;
  }

  function reasoning(s, open) {
    var d = el("details", "reasoning");
    if (open) d.open = true;
    d.appendChild(el("summary", "", "Reasoning"));
    d.appendChild(el("div", "plain", s));
    return d;
  }

  function askBody(m) {
    var d = el("div", "askbody");
    switch (m.ask) {
      case "command":
        d.appendChild(el("div", "label", m.isAnswered ? "Code (answered)" : "The agent wants to run code"));
        var pre = el("pre", "code"); pre.appendChild(el("code", "", m.text)); d.appendChild(pre);
        break;
      case "tool":
        var t = parseJSON(m.text) || {};
        d.appendChild(el("div", "label", "The agent wants to use " + (t.tool || "a tool") + (m.isAnswered ? " (answered)" : "")));
        d.appendChild(el("pre", "code", t.input !== undefined ? JSON.stringify(t.input, null, 2) : m.text));
        break;
      case "use_mcp_server":
        var a = parseJSON(m.text) || {};
        d.appendChild(el("div", "label", "The agent wants to use the MCP tool " + (a.toolName || "?") + " of " +
          (a.serverName || "?") + (m.isAnswered ? " (answered)" : "")));
        d.appendChild(el("pre", "code", a.arguments || m.text));
        break;
      case "followup":
        var q = parseJSON(m.text) || { question: m.text };
        d.appendChild(el("div", "label", "Question"));
        d.appendChild(md(q.question || m.text));
        break;
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
        d.appendChild(el("div", "label", m.ask.replace(/_/g, " ")));
        if (m.text) d.appendChild(el("div", "plain", m.text));
    }
    return d;
  }

  function actions(m, i) {
    var a = el("div", "actions");
    var rw = el("button", "link rewind", "⟲ rewind to here");
    rw.type = "button";
    rw.title = "Remove this message and everything after it";
    rw.title = "Go back to before this message: the conversation, and what you choose of the files and the kernel";
    rw.addEventListener("click", function () { openRewind(m.ts); });
    a.appendChild(rw);
    if (isUserPrompt(m, i)) {
      var ed = el("button", "link edit", "✎ edit");
      ed.type = "button";
      ed.addEventListener("click", function () { startEdit(m); });
      a.appendChild(ed);
    }
    return a;
  }

  // ---- rewind ----

  var rewindTS = 0;

  function openRewind(ts) {
    rewindTS = ts;
    $("rwForce").checked = false;
    $("rewindDialog").hidden = false;
    $("rwDo").focus();
  }

  function rewindChoice() {
    return { noFiles: !$("rwFiles").checked, noKernel: !$("rwKernel").checked, force: $("rwForce").checked };
  }

  function closeRewind() { $("rewindDialog").hidden = true; rewindTS = 0; }

  function showRewindReport(r) {
    $("rwSummary").textContent = r.summary || "";
    var ul = $("rwConflicts");
    ul.textContent = "";
    (r.conflicts || []).forEach(function (p) { ul.appendChild(el("li", "conflict", p)); });
    $("rewindReport").hidden = false;
  }

  function renderChrome() {
    var s = $("status");
    s.textContent = st.kernelStatus || "idle";
    s.className = "status status-" + (st.kernelStatus || "idle");
    $("title").textContent = st.title || (st.sessionId ? "Session " + st.sessionId.slice(0, 8) : "agentkernel");
    var t = st.totals || {};
    var parts = [(t.inputTokens || 0) + " in", (t.outputTokens || 0) + " out", "$" + Number(t.cost || 0).toFixed(4)];
    if (t.contextUsed) parts.push("context " + (t.contextWindow ? Math.round(100 * t.contextUsed / t.contextWindow) + "% of " + Math.round(t.contextWindow / 1000) + "k" : t.contextUsed + " tokens"));
    renderTotals(parts);
    var sel = $("mode");
    var modes = st.modes && st.modes.length ? st.modes : [st.mode];
    if (sel.dataset.modes !== modes.join(",")) {
      sel.textContent = "";
      modes.forEach(function (x) { var o = el("option", "", x); o.value = x; sel.appendChild(o); });
      sel.dataset.modes = modes.join(",");
    }
    sel.value = st.mode;
    var asel = $("agentMode");
    var amodes = st.agentModes && st.agentModes.length ? st.agentModes : [st.agentMode || "code"];
    if (asel.dataset.modes !== amodes.join(",")) {
      asel.textContent = "";
      amodes.forEach(function (x) { var o = el("option", "", x); o.value = x; asel.appendChild(o); });
      asel.dataset.modes = amodes.join(",");
    }
    asel.value = st.agentMode || "code";
    var model = $("model");
    if (document.activeElement !== model) model.value = st.model || "";
    $("cancel").disabled = !(st.kernelStatus === "busy" || st.kernelStatus === "waiting");
    renderMCP();
    renderAsk();
  }

  // renderTotals shows "1200 in · 300 out · $0.0123 · context 3% of 200k":
  // a narrow header wraps it between its parts, never inside one.
  function renderTotals(parts) {
    var box = $("totals");
    if (box.textContent === parts.join(" · ")) return;
    box.textContent = "";
    parts.forEach(function (p, i) {
      if (i) box.appendChild(document.createTextNode(" "));
      box.appendChild(el("span", "", i < parts.length - 1 ? p + " ·" : p));
    });
  }

  // renderMCP shows the MCP servers: name, state, transport, error, tools.
  function renderMCP() {
    var list = st.mcpServers || [], box = $("mcp"), ul = $("mcpList");
    box.hidden = list.length === 0;
    var ready = list.filter(function (s) { return s.state === "ready"; }).length;
    $("mcpSummary").textContent = "MCP servers: " + ready + " of " + list.length + " ready";
    ul.textContent = "";
    list.forEach(function (s) {
      var li = el("li", "mcp-server mcp-" + s.state.replace(/ /g, "-"));
      li.appendChild(el("strong", "", s.name));
      li.appendChild(el("span", "mcp-state", " " + s.state + (s.transport ? " · " + s.transport : "") + (s.scope ? " · " + s.scope : "")));
      if (s.where) li.appendChild(el("div", "mcp-where", s.where));
      if (s.error) li.appendChild(el("div", "mcp-error", s.error));
      if (s.tools && s.tools.length) li.appendChild(el("div", "mcp-tools", s.tools.join(", ")));
      ul.appendChild(li);
    });
  }

  var shownAsk = 0;
  var DEFAULT_PLACEHOLDER = $("prompt").placeholder;
  function renderAsk() {
    var p = st.pendingAsk, box = $("ask");
    if (!p) {
      if (shownAsk) $("prompt").placeholder = DEFAULT_PLACEHOLDER;
      box.hidden = true; shownAsk = 0; return;
    }
    box.hidden = false;
    if (shownAsk === p.ts) return;
    shownAsk = p.ts;
    var txt = $("askText"), sug = $("askSuggest");
    txt.textContent = ""; sug.textContent = "";
    // What the ask takes, and so which buttons it has, is the server's word.
    var interactive = p.answer && p.answer.class === "interactive";
    var approval = interactive && takes(p, "yesButtonClicked");
    $("approve").hidden = !takes(p, "yesButtonClicked");
    $("approve").textContent = approval ? "Approve" : (p.ask === "api_req_failed" ? "Retry" : "Continue");
    $("alwaysAllow").hidden = !takes(p, "allowAll");
    $("deny").hidden = !takes(p, "noButtonClicked");
    $("deny").textContent = approval ? "Deny" : "Stop";
    box.dataset.ask = p.ask;
    box.dataset.ts = String(p.ts);
    if (p.ask === "followup") {
      var q = parseJSON(p.text) || { question: p.text };
      txt.appendChild(md(q.question));
      (q.suggest || []).forEach(function (s) {
        var b = el("button", "suggestion", s);
        b.type = "button";
        b.addEventListener("click", function () { respond("messageResponse", s); });
        sug.appendChild(b);
      });
      $("prompt").placeholder = "Type your answer…";
    } else if (approval) {
      var mcpAsk = p.ask === "use_mcp_server" ? parseJSON(p.text) : null;
      txt.textContent = p.ask === "command" ? "Run this code?" :
        mcpAsk ? "Allow the MCP tool " + mcpAsk.toolName + " of " + mcpAsk.serverName + "?" : "Allow this tool call?";
      $("prompt").placeholder = "Or type feedback to deny with a reason…";
    } else if (p.ask === "completion_result") {
      txt.textContent = "Done. Send a follow-up to continue.";
    } else {
      txt.textContent = p.ask.replace(/_/g, " ");
    }
  }

  function respond(kind, text, images) {
    var p = st.pendingAsk;
    if (!p) return;
    var f = { type: "askResponse", ts: p.ts, response: kind };
    if (text) f.text = text;
    if (images && images.length) f.images = images;
    send(f);
  }

  function startEdit(m) {
    editingTS = m.ts;
    $("prompt").value = m.text || "";
    $("editing").hidden = false;
    $("prompt").focus();
  }
  function stopEdit() { editingTS = 0; $("editing").hidden = true; }

  function showBanner(msg, kind) {
    var b = $("banner");
    b.textContent = msg;
    b.className = "banner " + (kind || "");
    b.hidden = false;
    if (kind === "error") setTimeout(function () { if (b.textContent === msg) hideBanner(); }, 8000);
  }
  function hideBanner() { $("banner").hidden = true; }

  // ---- sessions ----

  function renderSessions(list) {
    var ul = $("sessionList");
    ul.textContent = "";
    $("searchHits").textContent = "";
    list.forEach(function (s) {
      var li = el("li", s.current ? "current" : "");
      var b = el("button", "link", s.title || s.id.slice(0, 8));
      b.type = "button";
      b.addEventListener("click", function () { send({ type: "loadSession", sessionId: s.id }); toggleSessions(false); });
      li.appendChild(b);
      li.appendChild(el("div", "sub", new Date(s.updatedAt).toLocaleString() + " · " + s.messageCount + " messages" + (s.model ? " · " + s.model : "")));
      if (s.preview) li.appendChild(el("div", "sub preview", s.preview));
      ul.appendChild(li);
    });
    if (!list.length) ul.appendChild(el("li", "sub", "No sessions match."));
  }

  function renderHits(hits) {
    var ul = $("searchHits");
    ul.textContent = "";
    if (!hits.length) { ul.appendChild(el("li", "sub", "No messages match.")); return; }
    hits.forEach(function (h) {
      var li = el("li");
      var b = el("button", "link", "Session " + h.sessionId.slice(0, 8));
      b.type = "button";
      b.addEventListener("click", function () { send({ type: "loadSession", sessionId: h.sessionId }); toggleSessions(false); });
      li.appendChild(b);
      var snip = el("div", "sub");
      snip.appendChild(window.AKMarkdown.render(h.snippet));
      li.appendChild(snip);
      ul.appendChild(li);
    });
  }

  function toggleSessions(show) {
    var a = $("sessions");
    a.hidden = !show;
    $("sessionsBtn").setAttribute("aria-expanded", String(show));
    if (show) send({ type: "listSessions", search: $("sessionQuery").value.trim() });
  }

  // ---- attached images ----
  // Pasted, dropped or picked images go with the next prompt as data: URLs.
  // One over the server's limits (1 MiB, and a long edge the models take)
  // is scaled down here first, so a screenshot just works.

  var MAX_IMAGES = 4, MAX_IMAGE_BYTES = 1 << 20, MAX_EDGE = 1568;
  var IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];
  // The attached images in the order they were added: a slot's url is
  // null while its image is read and scaled.
  var attachments = [];
  function readyImages() { return attachments.filter(function (a) { return a.url; }).map(function (a) { return a.url; }); }
  window.__akPanel.attachments = readyImages;

  function urlBytes(u) { return Math.floor((u.length - u.indexOf(",") - 1) * 3 / 4); }

  function readFile(file) {
    return new Promise(function (resolve, reject) {
      var r = new FileReader();
      r.onload = function () { resolve(r.result); };
      r.onerror = function () { reject(new Error("could not read " + file.name)); };
      r.readAsDataURL(file);
    });
  }

  function loadImage(url) {
    return new Promise(function (resolve, reject) {
      var img = new Image();
      img.onload = function () { resolve(img); };
      img.onerror = function () { reject(new Error("not an image the browser can read")); };
      img.src = url;
    });
  }

  // fit returns url, or a scaled-down re-encoding within the limits.
  function fit(url) {
    return loadImage(url).then(function (img) {
      var w = img.naturalWidth, h = img.naturalHeight;
      if (urlBytes(url) <= MAX_IMAGE_BYTES && Math.max(w, h) <= MAX_EDGE && SAFE_IMG.test(url)) return url;
      var scale = Math.min(1, MAX_EDGE / Math.max(w, h));
      for (var tries = 0; tries < 6; tries++, scale *= 0.7) {
        var c = document.createElement("canvas");
        c.width = Math.max(1, Math.round(w * scale));
        c.height = Math.max(1, Math.round(h * scale));
        var g = c.getContext("2d");
        g.fillStyle = "#fff"; // JPEG has no transparency
        g.fillRect(0, 0, c.width, c.height);
        g.drawImage(img, 0, 0, c.width, c.height);
        var out = /^data:image\/png/.test(url) ? c.toDataURL("image/png") : "";
        if (!out || urlBytes(out) > MAX_IMAGE_BYTES) out = c.toDataURL("image/jpeg", 0.85);
        if (urlBytes(out) <= MAX_IMAGE_BYTES) return out;
      }
      throw new Error("too large even when scaled down");
    });
  }

  function addImages(files) {
    files = Array.prototype.slice.call(files || []);
    files.forEach(function (file) {
      if (IMAGE_TYPES.indexOf(file.type) < 0) {
        showBanner("Only PNG, JPEG, GIF and WebP images can be attached (" + (file.name || file.type || "file") + ").", "error");
        return;
      }
      if (attachments.length >= MAX_IMAGES) {
        showBanner("Image " + (file.name || "") + " not attached: at most " + MAX_IMAGES + " images go with one message.", "error");
        return;
      }
      var slot = { url: null };
      attachments.push(slot);
      readFile(file).then(fit).then(function (url) {
        slot.url = url;
        renderAttachments();
      }).catch(function (err) {
        var i = attachments.indexOf(slot);
        if (i >= 0) attachments.splice(i, 1);
        showBanner("Image " + (file.name || "") + " not attached: " + err.message + ".", "error");
      });
    });
  }

  function renderAttachments() {
    var box = $("attachments");
    box.textContent = "";
    attachments.forEach(function (slot, i) {
      var url = slot.url;
      if (!url) return;
      var a = el("div", "attachment");
      var img = el("img");
      img.alt = "attached image " + (i + 1);
      img.src = url;
      a.appendChild(img);
      var x = el("button", "", "×");
      x.type = "button";
      x.title = "Remove this image";
      x.setAttribute("aria-label", "remove attached image " + (i + 1));
      x.addEventListener("click", function () { attachments.splice(attachments.indexOf(slot), 1); renderAttachments(); });
      a.appendChild(x);
      box.appendChild(a);
    });
    box.hidden = readyImages().length === 0;
  }

  function clipboardImages(dt) {
    var files = [];
    if (!dt) return files;
    Array.prototype.forEach.call(dt.items || [], function (it) {
      if (it.kind === "file" && IMAGE_TYPES.indexOf(it.type) >= 0) {
        var f = it.getAsFile();
        if (f) files.push(f);
      }
    });
    return files;
  }

  // ---- wiring ----

  function submitPrompt() {
    var text = $("prompt").value.trim();
    var images = readyImages();
    if (images.length < attachments.length) {
      showBanner("An image is still being prepared: send again in a moment.", "error");
      return;
    }
    if (!text) {
      if (images.length) showBanner("Add a few words to go with the image.", "error");
      return;
    }
    if (editingTS) {
      if (images.length) { showBanner("An edit cannot carry images: send them with a new message.", "error"); return; }
      send({ type: "editMessage", ts: editingTS, text: text });
    } else if (takes(st.pendingAsk, "messageResponse"))
      respond("messageResponse", text, images); // the ask takes a text as its answer
    else {
      var f = { type: "newTask", text: text };
      if (images.length) f.images = images;
      send(f);
    }
    $("prompt").value = "";
    attachments = [];
    renderAttachments();
    stopEdit();
  }

  $("attach").addEventListener("click", function () { $("attachFile").click(); });
  $("attachFile").addEventListener("change", function (e) { addImages(e.target.files); e.target.value = ""; });
  $("prompt").addEventListener("paste", function (e) {
    var files = clipboardImages(e.clipboardData);
    if (!files.length) return;
    if (!e.clipboardData.getData("text/plain")) e.preventDefault();
    addImages(files);
  });
  $("composer").addEventListener("dragover", function (e) {
    if (e.dataTransfer && Array.prototype.indexOf.call(e.dataTransfer.types || [], "Files") >= 0) {
      e.preventDefault();
      $("composer").classList.add("dropping");
    }
  });
  $("composer").addEventListener("dragleave", function () { $("composer").classList.remove("dropping"); });
  $("composer").addEventListener("drop", function (e) {
    $("composer").classList.remove("dropping");
    if (!e.dataTransfer || !e.dataTransfer.files.length) return;
    e.preventDefault();
    addImages(e.dataTransfer.files);
  });

  $("send").addEventListener("click", submitPrompt);
  $("prompt").addEventListener("keydown", function (e) {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); submitPrompt(); }
  });
  $("cancel").addEventListener("click", function () { send({ type: "cancelTask" }); });
  $("cancelEdit").addEventListener("click", function () { $("prompt").value = ""; stopEdit(); });
  $("rwDo").addEventListener("click", function () {
    if (rewindTS) send({ type: "deleteMessage", ts: rewindTS, rewind: rewindChoice() });
    closeRewind();
  });
  $("rwFork").addEventListener("click", function () {
    if (rewindTS) send({ type: "forkSession", ts: rewindTS, rewind: rewindChoice() });
    closeRewind();
  });
  $("rwCancel").addEventListener("click", closeRewind);
  $("rwClose").addEventListener("click", function () { $("rewindReport").hidden = true; });
  $("approve").addEventListener("click", function () { respond("yesButtonClicked"); });
  $("alwaysAllow").addEventListener("click", function () { respond("allowAll"); });
  $("deny").addEventListener("click", function () { respond("noButtonClicked"); });
  $("mode").addEventListener("change", function (e) { send({ type: "setMode", mode: e.target.value }); });
  $("agentMode").addEventListener("change", function (e) { send({ type: "setMode", mode: e.target.value }); });
  // Scrolled to the top: the older messages come.
  $("timeline").addEventListener("scroll", function (e) { if (e.target.scrollTop < 40) loadOlder(); });
  $("model").addEventListener("change", function (e) { var v = e.target.value.trim(); if (v && v !== st.model) send({ type: "setModel", model: v }); });
  $("sessionsBtn").addEventListener("click", function () { toggleSessions($("sessions").hidden); });
  function searchSessions() {
    var q = $("sessionQuery").value.trim();
    send({ type: "listSessions", search: q });
    if (q) send({ type: "searchMessages", query: q });
  }
  $("sessionSearchBtn").addEventListener("click", searchSessions);
  $("sessionQuery").addEventListener("keydown", function (e) {
    if (e.key === "Enter" && !e.isComposing) { e.preventDefault(); searchSessions(); }
  });

  if (viaParent) connectParent();
  else if (!token) showBanner("This page needs the URL with its token: run %agent webview in the notebook.", "error");
  else connect();
})();
