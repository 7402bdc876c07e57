// The Sessions pane (the stored sessions, search over every message) and
// the rewind dialog and its report.

import { $, button, el } from "./dom.js";
import { render as markdown } from "./markdown.js";

/** Lists sessions; load(id) makes one current. */
export function renderSessions(list, load) {
  const ul = $("sessionList");
  ul.textContent = "";
  $("searchHits").textContent = "";
  for (const s of list) {
    const li = el("li", s.current ? "current" : "");
    li.appendChild(button("link", s.title || s.id.slice(0, 8), () => load(s.id)));
    li.appendChild(el("div", "sub", new Date(s.updatedAt).toLocaleString() + " · " + s.messageCount + " messages" +
      (s.model ? " · " + s.model : "")));
    if (s.preview) li.appendChild(el("div", "sub preview", s.preview));
    ul.appendChild(li);
  }
  if (!list.length) ul.appendChild(el("li", "sub", "No sessions match."));
}

/** Lists the messages a search found (matches in **…**); load(id) opens one's session. */
export function renderHits(hits, load) {
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
    snip.appendChild(markdown(h.snippet));
    li.appendChild(snip);
    ul.appendChild(li);
  }
}

/** The rewind dialog of "rewind to here": what goes back besides the conversation. */
export class RewindDialog {
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
}

/** Shows what a rewind (or fork) did. */
export function showRewindReport(r) {
  $("rwSummary").textContent = r.summary || "";
  const ul = $("rwConflicts");
  ul.textContent = "";
  for (const p of r.conflicts || []) ul.appendChild(el("li", "conflict", p));
  $("rewindReport").hidden = false;
}
