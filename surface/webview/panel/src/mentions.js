// The prompt box's completion list of @-mentions: as @ and letters are
// typed, the page asks the kernel (completeMention, with what follows the
// @) and shows what it offers (mentionCompletions): the kernel's
// variables, the notebook's cells, the workspace's files. Arrow keys move,
// Enter or Tab picks, Escape closes, a click picks; a pick puts "@name "
// in place of what was typed (a folder, "@data/", goes on into it). The
// kernel decides what is offered; this shows it as text only.

import { el } from "./dom.js";

// mentionAt finds the mention being typed at the caret: the @ after the
// start, a space or an opening bracket or quote (as the kernel reads
// mentions: session/mentions.go), and the letters after it.
const mentionAt = /(?:^|[\s(\[{"'])@([A-Za-z0-9_~][A-Za-z0-9_./~:-]*)?$/;

/** How many completions are asked for. */
const LIMIT = 20;

export class MentionList {
  /**
   * box is the prompt's textarea, list the element the list is drawn in,
   * send sends a client frame.
   */
  constructor(box, list, send) {
    this.box = box;
    this.list = list;
    this.send = send;
    this.prefix = null; // the prefix asked for, null: no mention at the caret
    this.asked = new Set(); // the ids of the completeMention frames sent
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
    this.send(f); // send stamps its id
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
      // mousedown, not click: the box keeps the focus (and the caret).
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
    const text = "@" + c.mention + (into ? "" : " ");
    const end = t.start + 1 + t.prefix.length;
    b.value = b.value.slice(0, t.start) + text + b.value.slice(end);
    const caret = t.start + text.length;
    b.setSelectionRange(caret, caret);
    this.close();
    if (into) this.update(); // a folder: what is in it
  }

  /** close hides the list; the next mention typed asks again. */
  close() {
    this.list.hidden = true;
    this.list.replaceChildren();
    this.items = [];
    this.prefix = null;
    this.box.removeAttribute("aria-activedescendant");
  }
}
