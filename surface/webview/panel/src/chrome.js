// Everything around the timeline: the header (status, title, totals, and
// the Settings button, whose tooltip says the model and the modes: their
// controls are the settings view's, settings.js), the MCP servers, the ask
// box and the banner.

import { $, button, el, parseJSON } from "./dom.js";
import { md } from "./render.js";
import { askDiff, diffView, reviewTitle } from "./review.js";
import { takes } from "./state.js";

/** Shows msg in the banner; kind "error" goes by itself after 8 s. */
export function showBanner(msg, kind) {
  const b = $("banner");
  b.textContent = msg;
  b.className = "banner " + (kind || "");
  b.hidden = false;
  if (kind === "error") setTimeout(() => { if (b.textContent === msg) hideBanner(); }, 8000);
}

export function hideBanner() {
  $("banner").hidden = true;
}

// totals shows "1200 in · 300 out · $0.0123 · context 3% of 200k": a
// narrow header wraps it between its parts, never inside one.
function totals(t) {
  const parts = [(t.inputTokens || 0) + " in", (t.outputTokens || 0) + " out", "$" + Number(t.cost || 0).toFixed(4)];
  if (t.contextUsed) {
    parts.push("context " + (t.contextWindow
      ? Math.round(100 * t.contextUsed / t.contextWindow) + "% of " + Math.round(t.contextWindow / 1000) + "k"
      : t.contextUsed + " tokens"));
  }
  const box = $("totals");
  if (box.textContent === parts.join(" · ")) return;
  box.textContent = "";
  parts.forEach((p, i) => {
    if (i) box.appendChild(document.createTextNode(" "));
    box.appendChild(el("span", "", i < parts.length - 1 ? p + " ·" : p));
  });
}

// mcp shows the MCP servers: name, state, transport, error, tools.
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

/**
 * The ask box: the pending ask, with the answers it takes (its answer's
 * responses, the server's word): Approve / Always allow / Deny, Retry or
 * Continue / Stop, suggested answers. respond(kind, text) answers it.
 */
export class AskBox {
  constructor(respond) {
    this.respond = respond;
    this.shown = 0; // ts of the ask shown
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
    // An approval (interactive, with a yes) approves and denies; another
    // yes continues (or retries) and its no stops.
    const approval = !!p.answer && p.answer.class === "interactive" && takes(p, "yesButtonClicked");
    // A change to review (its diff) is accepted or rejected.
    const review = approval && !!askDiff(p);
    $("approve").hidden = !takes(p, "yesButtonClicked");
    $("approve").textContent = review ? "Accept" : approval ? "Approve" : p.ask === "api_req_failed" ? "Retry" : "Continue";
    $("alwaysAllow").hidden = !takes(p, "allowAll");
    $("alwaysAllow").textContent = review ? "Always" : "Always allow";
    $("alwaysAllow").title = review
      ? "Accept, and let the agent use " + ((parseJSON(p.text) || {}).tool || "this tool") + " without asking for the rest of the session"
      : "";
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
    // A text answers the ask when it takes one: a denial with reasons, or
    // the question's answer. Else it is the next prompt.
    if (takes(p, "messageResponse")) {
      $("prompt").placeholder = approval ? "Or type feedback to deny with a reason…" : "Type your answer…";
    } else {
      $("prompt").placeholder = this.placeholder;
    }
  }
}

/** Redraws everything but the timeline from the state st. */
export function renderChrome(st, askBox) {
  const s = $("status");
  s.textContent = st.kernelStatus || "idle";
  s.className = "status status-" + (st.kernelStatus || "idle");
  const title = $("title");
  title.textContent = st.title || (st.sessionId ? "Session " + st.sessionId.slice(0, 8) : "agentkernel");
  title.title = st.sessionId ? "Session " + st.sessionId : "";
  totals(st.totals || {});
  $("settingsBtn").title = "Model: " + (st.model || "none") + " · mode " + (st.agentMode || "code") +
    " · permissions " + (st.permissionMode || "default");
  $("cancel").disabled = !(st.kernelStatus === "busy" || st.kernelStatus === "waiting");
  mcp(st.mcpServers || []);
  askBox.show(st.pendingAsk);
}
