// Review of a change the agent asks to make: a tool ask whose text carries
// a diff (messages.ToolAsk.Diff — a notebook cell's lines, or a file's) is
// shown as that diff, its removed and added lines coloured, with Accept,
// Always and Reject. The answers are the approval's own (yesButtonClicked,
// allowAll: this tool for the rest of the session, noButtonClicked).

import { el, parseJSON } from "./dom.js";

/** The diff of a tool ask p (a message), or "" when it carries none. */
export function askDiff(p) {
  if (!p || p.ask !== "tool") return "";
  const t = parseJSON(p.text);
  return t && typeof t.diff === "string" ? t.diff : "";
}

// kind of one line of a diff: "- " removed, "+ " added, "  " kept; any
// other line heads a part ("cell 3fa2c1b0:", "cell 3fa2c1b0 (deleted):").
function kind(line) {
  if (line.startsWith("- ") || line === "-") return "del";
  if (line.startsWith("+ ") || line === "+") return "add";
  if (line.startsWith("  ") || line === "") return "ctx";
  return "head";
}

/** A diff's lines as a block, each line coloured by its kind. */
export function diffView(diff) {
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

/** What the change is to: the first head line of a diff, else the tool. */
export function reviewTitle(p) {
  const t = parseJSON(p.text) || {};
  const head = askDiff(p).split("\n").find((l) => kind(l) === "head");
  const what = head ? head.replace(/:$/, "") : (t.tool || "a tool");
  return "Review the agent's change to " + what;
}
