// The kernel's mirror of the notebook, the page's side (the mirror
// capability of docs/notebook-protocol.md): the page sends the kernel a
// snapshot of its notebook when the comm opens, then what changes, each
// message with the next version, at most once a frame, as a collaborator's
// client is fed by the shared model. The kernel answers the agent's reads
// from it and asks the page only when it is stale or lacks something.
// NotebookLink (notebook.ts) owns one MirrorFeed per notebook.
import { NotebookPanel } from '@jupyterlab/notebook';
import { ISharedCell, ISharedNotebook } from '@jupyter/ydoc';

import { mirrorCell } from './notebookOps';

/** The version of the mirror capability spoken here (comm_open's mirror). */
export const MIRROR_CAPABILITY = 1;

/** How long changes wait to be sent when no frame comes (a hidden tab has none). */
const FLUSH_FALLBACK_MS = 50;

/**
 * MirrorFeed follows the notebook's shared model and sends its changes
 * through send (false: the comm is not open; the next snapshot covers
 * them). take() gives what is pending now, which every reply to the
 * kernel carries: a write's change comes with its reply.
 */
export class MirrorFeed {
  /** The version of the last snapshot or change sent. */
  version = 0;
  private readonly watched = new WeakSet<ISharedCell>();
  private dirty = new Set<string>();
  private order = false;
  private frame: number | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private model: ISharedNotebook | null = null;

  constructor(
    private readonly panel: NotebookPanel,
    private readonly send: (data: Record<string, unknown>) => boolean
  ) {}

  dispose(): void {
    this.unschedule();
    this.model?.changed.disconnect(this.onNotebook, this);
    this.model = null;
  }

  /** Sends the notebook whole (the comm opened, or the kernel asked). */
  snapshot(): void {
    const nb = this.panel.content.model?.sharedModel;
    if (!nb) {
      return;
    }
    this.follow(nb);
    this.unschedule();
    this.dirty.clear();
    this.order = false;
    this.version++;
    if (!this.send({ snapshot: { version: this.version, cells: nb.cells.map(c => mirrorCell(c)) } })) {
      this.version--;
    }
  }

  /** Sends the changes still pending, if any. */
  flush(): void {
    const change = this.take();
    if (change && !this.send({ changes: change })) {
      this.version--; // the comm is gone: the next one starts with a snapshot
    }
  }

  /**
   * The changes still pending, with the next version (null: none), to be
   * sent now with a reply ({"reply": …, "changes": …}: one message, the
   * change applied first).
   */
  take(): Record<string, unknown> | null {
    this.unschedule();
    const nb = this.model;
    if (!nb || (!this.order && this.dirty.size === 0)) {
      return null;
    }
    const cells = nb.cells.filter(c => this.dirty.has(c.id)).map(c => mirrorCell(c));
    const change: Record<string, unknown> = { version: ++this.version, cells };
    if (this.order) {
      change.order = nb.cells.map(c => c.id);
    }
    this.dirty.clear();
    this.order = false;
    return change;
  }

  private follow(nb: ISharedNotebook): void {
    if (this.model !== nb) {
      this.model?.changed.disconnect(this.onNotebook, this);
      this.model = nb;
      nb.changed.connect(this.onNotebook, this);
    }
    nb.cells.forEach(c => this.watch(c));
  }

  private watch(cell: ISharedCell): boolean {
    if (this.watched.has(cell)) {
      return false;
    }
    this.watched.add(cell);
    cell.changed.connect(() => this.touched(cell.id));
    return true;
  }

  private onNotebook(nb: ISharedNotebook, change: { cellsChange?: unknown }): void {
    if (!change.cellsChange) {
      return;
    }
    this.order = true;
    for (const c of nb.cells) {
      if (this.watch(c)) {
        this.dirty.add(c.id); // new here (inserted, or moved as a new cell)
      }
    }
    this.schedule();
  }

  private touched(id: string): void {
    this.dirty.add(id);
    this.schedule();
  }

  private schedule(): void {
    if (this.frame !== null || this.timer !== null) {
      return;
    }
    this.frame = requestAnimationFrame(() => this.flush());
    this.timer = setTimeout(() => this.flush(), FLUSH_FALLBACK_MS);
  }

  private unschedule(): void {
    if (this.frame !== null) {
      cancelAnimationFrame(this.frame);
      this.frame = null;
    }
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }
}
