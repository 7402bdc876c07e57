// Attached images: pasted, dropped or picked, they go with the next prompt
// as data: URLs. One over the server's limits (1 MiB, and a long edge the
// models take) is scaled down here first, so a screenshot just works.

import { $, button, el } from "./dom.js";
import { SAFE_IMG } from "./render.js";

const MAX_IMAGES = 4;
const MAX_IMAGE_BYTES = 1 << 20;
const MAX_EDGE = 1568;
const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];

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

// fit returns url, or a scaled-down re-encoding within the limits.
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
    g.fillStyle = "#fff"; // JPEG has no transparency
    g.fillRect(0, 0, c.width, c.height);
    g.drawImage(img, 0, 0, c.width, c.height);
    let out = /^data:image\/png/.test(url) ? c.toDataURL("image/png") : "";
    if (!out || urlBytes(out) > MAX_IMAGE_BYTES) out = c.toDataURL("image/jpeg", 0.85);
    if (urlBytes(out) <= MAX_IMAGE_BYTES) return out;
  }
  throw new Error("too large even when scaled down");
}

/** The image files of a clipboard or drop's DataTransfer. */
export function clipboardImages(dt) {
  const files = [];
  for (const it of (dt && dt.items) || []) {
    if (it.kind === "file" && IMAGE_TYPES.indexOf(it.type) >= 0) {
      const f = it.getAsFile();
      if (f) files.push(f);
    }
  }
  return files;
}

/** The tray of images attached to the next prompt; problems go to fail(text). */
export class Attachments {
  constructor(fail) {
    this.fail = fail;
    this.slots = []; // in the order added; a slot's url is null while it is read and scaled
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
}
