// Whether the user is typing in a cell of a notebook: the agent's change
// to a cell being typed in is refused as a conflict (notebookOps.ts), and
// the agent tries again later.
import { Cell } from '@jupyterlab/cells';
import { NotebookPanel } from '@jupyterlab/notebook';

/**
 * A cell whose editor has focus and was typed in less than this long ago
 * is being typed in: the agent's change to it (its text, moving it,
 * deleting it) is refused as a conflict, and the agent tries again later.
 */
export const TYPING_GRACE_MS = 3000;

/**
 * TypingWatch knows when the user last typed in each cell of a notebook:
 * a change of the active cell's text that is not the agent's (made while
 * NotebookOps applies one) counts. Collaborators' changes to the active
 * cell count too: someone is typing there.
 */
export class TypingWatch {
  private readonly typed = new Map<string, number>(); // cell id → ms
  private watched: Cell | null = null;
  /** True while the agent's change is made: its own text changes do not count. */
  applying = false;

  constructor(private readonly panel: NotebookPanel) {
    panel.content.activeCellChanged.connect(this.follow, this);
    this.follow();
  }

  dispose(): void {
    this.panel.content.activeCellChanged.disconnect(this.follow, this);
    this.watched?.model.contentChanged.disconnect(this.onChange, this);
    this.watched = null;
  }

  /**
   * Whether cell id is being typed in: its editor has focus and was typed
   * in less than TYPING_GRACE_MS ago.
   */
  isTyping(id: string, now = Date.now()): boolean {
    const active = this.panel.content.activeCell;
    if (!active || active.model.id !== id || !active.editor?.hasFocus()) {
      return false;
    }
    return now - (this.typed.get(id) ?? -Infinity) < TYPING_GRACE_MS;
  }

  private follow(): void {
    const cell = this.panel.content.activeCell;
    if (cell === this.watched) {
      return;
    }
    this.watched?.model.contentChanged.disconnect(this.onChange, this);
    this.watched = cell;
    cell?.model.contentChanged.connect(this.onChange, this);
  }

  private onChange(): void {
    if (!this.applying && this.watched) {
      this.typed.set(this.watched.model.id, Date.now());
    }
  }
}
