// The timeline: each message of the mirror as an <article>, redrawn when a
// frame changes it (at most once per animation frame), the view kept at
// the bottom while it was there.

import { $, button, el, parseJSON } from "./dom.js";
import { render as markdown } from "./markdown.js";
import { askDiff, diffView, reviewTitle } from "./review.js";

/** Whether message m (at index i) is a prompt of the user's. */
export function isUserPrompt(m, i) {
  return m.type === "say" && (m.say === "user_feedback" || (m.say === "text" && i === 0));
}

/** Images are shown only as data: URLs of these types. */
export const SAFE_IMG = /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]+$/;

/** Markdown (model text) in a div. */
export function md(s) {
  const d = el("div", "markdown");
  d.appendChild(markdown(s || ""));
  return d;
}

function reasoning(s, open) {
  const d = el("details", "reasoning");
  if (open) d.open = true;
  d.appendChild(el("summary", "", "Reasoning"));
  d.appendChild(el("div", "plain", s));
  return d;
}

function sayBody(m, i, box, body, on) {
  const kind = m.say;
  switch (kind) {
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
      // An error the settings mend (no model) offers them, first.
      if (m.settings && on.settings) body.appendChild(button("primary open-settings", "Open Settings", on.settings));
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
      body.appendChild(el("span", "", "MCP " + (r.serverName || "") + " · " + (r.toolName || "") +
        (m.progressStatus && m.progressStatus.text ? " · " + m.progressStatus.text : "")));
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
      body.appendChild(el("span", "", "↳ " + (u.model ? u.model + " · " : "") + (u.tokensIn || 0) + " in · " +
        (u.tokensOut || 0) + " out tokens · $" + Number(u.cost || 0).toFixed(4) +
        (u.latencyMs != null ? " · first token " + (u.latencyMs / 1000).toFixed(2) + " s" : "") +
        (u.durationMs != null ? " · " + (u.durationMs / 1000).toFixed(1) + " s" : "")));
      break;
    }
    case "api_req_retried":
    case "api_req_retry_delayed":
    case "condense_context":
    case "sliding_window_truncation":
    case "kernel_status":
    case "checkpoint_saved":
      box.classList.add("meta");
      body.appendChild(el("span", "", kind.replace(/_/g, " ") + (m.text ? ": " + m.text : "")));
      break;
    default:
      body.appendChild(el("div", "plain", m.text));
  }
  if (m.reasoning && kind !== "reasoning") body.insertBefore(reasoning(m.reasoning, m.partial), body.firstChild);
}

// askBody shows what an ask is about, by its kind; what it takes as an
// answer is the ask box's (chrome.js), from the ask's answer.
function askBody(m) {
  const d = el("div", "askbody");
  const answered = m.isAnswered ? " (answered)" : "";
  switch (m.ask) {
    case "command": {
      // A notebook cell's code names its cell (notebook_run_cell).
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
      d.appendChild(el("pre", "code", t.input !== undefined ? JSON.stringify(t.input, null, 2) : m.text));
      break;
    }
    case "use_mcp_server": {
      const a = parseJSON(m.text) || {};
      d.appendChild(el("div", "label", "The agent wants to use the MCP tool " + (a.toolName || "?") + " of " +
        (a.serverName || "?") + answered));
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

// Actions on a message: "rewind to here" on each, "edit" on a prompt.
function actions(m, i, on) {
  const a = el("div", "actions");
  const rw = button("link rewind", "⟲ rewind to here", () => on.rewind(m.ts));
  rw.title = "Go back to before this message: the conversation, and what you choose of the files and the kernel";
  a.appendChild(rw);
  if (isUserPrompt(m, i)) a.appendChild(button("link edit", "✎ edit", () => on.edit(m)));
  return a;
}

/** The <article> of message m, at index i; on: {rewind(ts), edit(m)}. */
export function renderMessage(m, i, on) {
  const box = el("article", "msg");
  const kind = m.ask || m.say;
  box.dataset.ts = String(m.ts);
  box.dataset.kind = m.type + ":" + kind;
  if (m.partial) box.classList.add("partial");
  const body = el("div", "body");
  if (m.type === "say") {
    sayBody(m, i, box, body, on);
  } else {
    box.classList.add("askmsg");
    if (m.isAnswered) box.classList.add("answered");
    body.appendChild(askBody(m));
  }
  for (const src of m.images || []) {
    if (!SAFE_IMG.test(src)) continue;
    const img = el("img", "image");
    img.alt = kind === "text" || kind === "user_feedback" ? "attached image" : "output image";
    img.src = src;
    body.appendChild(img);
  }
  box.appendChild(body);
  box.appendChild(actions(m, i, on));
  return box;
}

/**
 * The timeline of a Mirror's messages. on: {rewind(ts), edit(m),
 * loadOlder(), drawn()} — drawn is called after each redraw.
 */
export class Timeline {
  constructor(mirror, on) {
    this.mirror = mirror;
    this.on = on;
    this.root = $("timeline");
    this.nodes = new Map(); // ts → article
    this.dirty = new Set(); // ts to redraw at the next animation frame
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
      if (i === undefined) continue;
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
}
