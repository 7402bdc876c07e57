// agentkernel's web panel: mirrors one agent session and sends commands
// back (docs/webview-protocol.md). One page, served two ways: standalone by
// the kernel's web server over its WebSocket, and in the JupyterLab sidebar
// (window.AK_TRANSPORT = "postmessage"), whose host relays its frames over
// a Jupyter comm.
//
// Where things are: state.js is the mirror (frames in, what changed out);
// transport.js carries frames; render.js draws the timeline, chrome.js the
// rest, dialogs.js the sessions and the rewind; settings.js the settings
// view (model, effort, modes, API keys); images.js the attached images;
// theme.js wears the sidebar's theme; mentions.js the prompt box's list of
// @-mentions. This file wires them to the page.
// The bundle (surface/webview/static/panel.js) is built from these files by
// surface/webview/panel/build.mjs.

import { AskBox, hideBanner, renderChrome, showBanner } from "./chrome.js";
import { $ } from "./dom.js";
import { RewindDialog, renderHits, renderSessions, showRewindReport } from "./dialogs.js";
import { Attachments, clipboardImages } from "./images.js";
import { MentionList } from "./mentions.js";
import { Timeline } from "./render.js";
import { SettingsView } from "./settings.js";
import { Mirror, takes } from "./state.js";
import { applyTheme } from "./theme.js";
import { PROTOCOL, decode, parentTransport, socketTransport } from "./transport.js";

const mirror = new Mirror();
const rewind = new RewindDialog();
const attachments = new Attachments((text) => showBanner(text, "error"));
let transport = null;
let nextId = 1;
let editingTS = 0;
let loadingOlder = false;

// send stamps a client frame with the version and an id, and sends it.
function send(frame) {
  frame.v = PROTOCOL;
  frame.id = "c" + nextId++;
  if (!transport || !transport.send(JSON.stringify(frame))) showBanner("Not connected.", "warn");
}

// respond answers the pending ask.
function respond(kind, text, images) {
  const p = mirror.st.pendingAsk;
  if (!p) return;
  const f = { type: "askResponse", ts: p.ts, response: kind };
  if (text) f.text = text;
  if (images && images.length) f.images = images;
  send(f);
}

const askBox = new AskBox(respond);
const settingsView = new SettingsView(send);
const mentions = new MentionList($("prompt"), $("mentionList"), send);
const chrome = () => renderChrome(mirror.st, askBox);

// loadOlder asks for the page of messages before the oldest shown.
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

// openSettings shows the settings view (the no-model message's button, the
// sidebar's host asking for it).
function openSettings() {
  toggleSessions(false);
  settingsView.toggle(true);
}

const timeline = new Timeline(mirror, { rewind: (ts) => rewind.open(ts), edit: startEdit, loadOlder, drawn: chrome, settings: openSettings });

// loadSession makes a stored session current and closes the pane.
function loadSession(id) {
  send({ type: "loadSession", sessionId: id });
  toggleSessions(false);
}

// receive applies one message of the server's: a frame, or a batch.
function receive(text) {
  const frames = decode(text);
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
    } else if (c.ts !== undefined) timeline.changed(c.ts);
    else if (c.chrome) {
      chrome();
      // The model, a mode or a key changed (here or elsewhere): an open
      // settings view asks for its content again.
      // The view's mode controls follow the state, open or not.
      settingsView.modes(mirror.st);
      if (f.type === "settings" && settingsView.isOpen) settingsView.refresh();
    } else if (c.reply) reply(c.reply);
  }
}

// reply shows the answer to one of this page's commands.
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
      if (mentions.quiet(f)) break; // no completions of a mention: no list
      showBanner(f.text || f.code, "error");
      break;
  }
}

const handlers = {
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
  settings: openSettings,
};

// ---- the prompt box ----

function submitPrompt() {
  const text = $("prompt").value.trim();
  const images = attachments.ready();
  if (attachments.preparing()) {
    showBanner("An image is still being prepared: send again in a moment.", "error");
    return;
  }
  if (!text) {
    if (images.length) showBanner("Add a few words to go with the image.", "error");
    return;
  }
  if (editingTS) {
    if (images.length) {
      showBanner("An edit cannot carry images: send them with a new message.", "error");
      return;
    }
    send({ type: "editMessage", ts: editingTS, text });
  } else if (takes(mirror.st.pendingAsk, "messageResponse")) {
    respond("messageResponse", text, images); // the pending ask takes a text as its answer
  } else {
    const f = { type: "newTask", text };
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

// ---- wiring ----
// No <form> in the page (the sidebar's sandbox has no allow-forms, where a
// form is never submitted): buttons with click handlers, Enter a key handler.

const on = (id, event, fn) => $(id).addEventListener(event, fn);
const enter = (fn) => (e) => {
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
const sendOnEnter = enter(submitPrompt);
on("prompt", "keydown", (e) => {
  if (!mentions.keydown(e)) sendOnEnter(e); // the list's keys first
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
on("rwClose", "click", () => { $("rewindReport").hidden = true; });
on("approve", "click", () => respond("yesButtonClicked"));
on("alwaysAllow", "click", () => respond("allowAll"));
on("deny", "click", () => respond("noButtonClicked"));
// Scrolled to the top: the older messages come.
on("timeline", "scroll", (e) => { if (e.target.scrollTop < 40) loadOlder(); });
on("sessionsBtn", "click", () => toggleSessions($("sessions").hidden));
on("settingsBtn", "click", () => (settingsView.isOpen ? settingsView.toggle(false) : openSettings()));
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
