// Where the user is in a notebook, for the agent: the cell they are in and
// the text selected there, sent to the kernel over the notebook comm as it
// changes (docs/notebook-protocol.md, the focus message). The kernel puts
// it in the context block of the user's next prompt; it never asks the
// page for it, so a prompt waits on no round trip.
import { Cell } from '@jupyterlab/cells';
import { NotebookPanel } from '@jupyterlab/notebook';

/** The longest selected text sent (the kernel cuts it to less). */
export const MAX_FOCUS_SELECTION = 2000;

/** How long the focus must stay put before it is sent (a cursor dragged over text sends once). */
export const FOCUS_SETTLE_MS = 150;

/** Where the user is: the active cell's id and the selected text ('' each when none). */
export type Focus = { active: string; selection: string };

/** focus of panel now. */
export function focusOf(panel: NotebookPanel): Focus {
  const cell = panel.content.activeCell;
  if (!cell) {
    return { active: '', selection: '' };
  }
  let selection = '';
  const editor = cell.editor;
  if (editor) {
    const r = editor.getSelection();
    const a = editor.getOffsetAt(r.start);
    const b = editor.getOffsetAt(r.end);
    if (a !== b) {
      selection = cell.model.sharedModel.getSource().slice(Math.min(a, b), Math.max(a, b)).slice(0, MAX_FOCUS_SELECTION);
    }
  }
  return { active: cell.model.id, selection };
}

/**
 * FocusWatch follows the active cell of panel and the selection in its
 * editor, and calls send with the focus when it settles and differs from
 * the last sent. resend() sends the focus now (a comm just opened).
 */
export class FocusWatch {
  private watched: Cell | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private last = '';

  constructor(
    private readonly panel: NotebookPanel,
    private readonly send: (f: Focus) => boolean
  ) {
    panel.content.activeCellChanged.connect(this.follow, this);
    this.follow();
  }

  dispose(): void {
    this.panel.content.activeCellChanged.disconnect(this.follow, this);
    this.watched?.model.selections.changed.disconnect(this.changed, this);
    this.watched = null;
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }

  /** Sends the focus as it is now, whatever was sent before. */
  resend(): void {
    this.last = '';
    this.flush();
  }

  private follow(): void {
    const cell = this.panel.content.activeCell;
    if (cell === this.watched) {
      this.changed();
      return;
    }
    this.watched?.model.selections.changed.disconnect(this.changed, this);
    this.watched = cell;
    cell?.model.selections.changed.connect(this.changed, this);
    // A new active cell is sent at once (only a selection settles): the
    // kernel answers reads from its mirror without asking the page, so the
    // cell the user clicked, typed a prompt in and ran must be known
    // before that cell's turn reads the notebook.
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    this.flush();
  }

  private changed(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      this.flush();
    }, FOCUS_SETTLE_MS);
  }

  private flush(): void {
    const f = focusOf(this.panel);
    const key = JSON.stringify(f);
    if (key !== this.last && this.send(f)) {
      this.last = key;
    }
  }
}
