// The settings view: the model (a picker of the models the kernel's
// configuration and the built-in tables know, or any provider:model), the
// effort, the agent mode and the permissions — the page's only controls of
// them — and per provider an API key and its server's base URL (an
// OpenAI-compatible server: vLLM, llama.cpp, LM Studio, a LiteLLM proxy;
// the Ollama host), saved beside the keys, private, no restart needed.
//
// A key goes one way: typed into a password field, sent in a setKey frame,
// and the field is emptied at once. The kernel answers with a
// modelSettings frame that shows each key as a mask ("set, ends in abcd")
// and where it comes from; no frame ever carries a key back, and the view
// keeps nothing of it (the mirror, state.js, never sees these frames). A
// base URL holds no credential (the kernel refuses one with a user name or
// password), so it is shown as it is.

import { $, button, el } from "./dom.js";

/** The view; send(frame) sends a client frame. */
export class SettingsView {
  constructor(send) {
    this.send = send;
    this.rows = new Map(); // provider name → its row's parts
    this.current = null; // the last modelSettings frame
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
    $("svModelNote").textContent = f.model
      ? "Prompts use " + f.model + "; inline completions use " + (f.completionModel || "the same model") + "."
      : "No model yet: pick one, with its key below.";
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
    where.textContent = f.keysFile
      ? "Keys and server URLs are saved in " + f.keysFile + ", which only you can read. An environment variable wins over a saved one."
      : "Keys and server URLs cannot be saved by this kernel.";
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
      const row = el("div", "row");
      // A password field: the key is not shown as it is typed, nor kept
      // by the browser's form memory.
      r.input = field("key-input", "password", p.env + " for " + p.name, "API key for " + p.name, () => this.saveKey(p.name));
      r.save = button("primary key-save", "Save key", () => this.saveKey(p.name));
      r.remove = button("key-remove", "Remove", () => this.send({ type: "setKey", provider: p.name, key: "" }));
      row.append(r.input, r.save, r.remove);
      r.li.appendChild(row);
    }
    r.urlStatus = el("div", "sub url-status");
    r.li.appendChild(r.urlStatus);
    const row = el("div", "row");
    r.url = field("url-input", "url", URL_HINT[p.name] || "http://host:port",
      p.name === "ollama" ? "Ollama host" : "Base URL for " + p.name, () => this.saveURL(p.name));
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
}

// URL_HINT is each provider's example base URL.
const URL_HINT = {
  openai: "Server URL, e.g. http://localhost:8000/v1 (vLLM, llama.cpp, LM Studio, a LiteLLM proxy)",
  anthropic: "Server URL, e.g. https://proxy.example.com (a proxy of the Anthropic API)",
  ollama: "Ollama host, e.g. http://localhost:11434",
};

// onEnter calls fn on Enter (not while composing).
const onEnter = (fn) => (e) => {
  if (e.key === "Enter" && !e.isComposing) {
    e.preventDefault();
    fn();
  }
};

// field is a text input of type that the browser neither fills nor
// checks the spelling of, saved by enter on Enter.
function field(cls, type, placeholder, label, enter) {
  const f = el("input", cls);
  f.type = type;
  f.autocomplete = "off";
  f.spellcheck = false;
  f.placeholder = placeholder;
  f.setAttribute("aria-label", label);
  f.addEventListener("keydown", onEnter(enter));
  return f;
}

function option(value, text) {
  const o = el("option", "", text);
  o.value = value;
  return o;
}

// fill puts values in a select, unless it holds them already, and selects value.
function fill(sel, values, value) {
  if (sel.dataset.values !== values.join(",")) {
    sel.textContent = "";
    for (const v of values) sel.appendChild(option(v, v));
    sel.dataset.values = values.join(",");
  }
  if (document.activeElement !== sel) sel.value = value;
}

// keyStatus says where a provider's key comes from, as a mask.
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

// urlStatus says which server a provider's requests go to.
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
