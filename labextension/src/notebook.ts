// The notebook as the agent's workspace, JupyterLab's side: for every
// notebook on an agentkernel kernel — the Agent sidebar open or not — a
// comm to the kernel (target agentkernel.notebook, docs/notebook-protocol.md)
// through which the agent reads the notebook and inserts, edits, moves and
// deletes cells and fills a cell's outputs. Every change is made on the
// notebook's shared model, each operation one transaction: it shows at once,
// Ctrl+Z undoes it (JupyterLab's notebook undo for an inserted, moved or
// deleted cell; the cell's own for its text), it is saved as any change is,
// and jupyter-collaboration carries it to the other people on the notebook.
//
// And the cells talk to the agent: "Ask the agent" in the cell toolbar and
// "Fix with the agent" under an error output send a prompt naming the cell
// into the sidebar's conversation (IAgentSidebar, which the sidebar plugin
// provides).
//
// Where things are: NotebookLink is one notebook's comm (it opens, closes
// and reopens it as the kernel comes and goes) and answers the requests
// with NotebookOps, which does the operations on the model; TypingWatch
// tells whether the user is typing in a cell (a conflict); notebookPlugin
// wires them, the commands and the error output's button.
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { InputDialog } from '@jupyterlab/apputils';
import { Cell } from '@jupyterlab/cells';
import * as nbformat from '@jupyterlab/nbformat';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry, RenderedError } from '@jupyterlab/rendermime';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { ISharedCell, ISharedCodeCell, ISharedNotebook } from '@jupyter/ydoc';
import { LabIcon } from '@jupyterlab/ui-components';
import { Token } from '@lumino/coreutils';

import { Focus, FocusWatch } from './focus';

/** The kernel's comm target of the notebook (bridge.NotebookTarget). */
export const NOTEBOOK_TARGET = 'agentkernel.notebook';

/** The version of the notebook comm's protocol spoken here. */
export const NOTEBOOK_PROTOCOL = 1;

/**
 * A cell whose editor has focus and was typed in less than this long ago
 * is being typed in: the agent's change to it (its text, moving it,
 * deleting it) is refused as a conflict, and the agent tries again later.
 */
export const TYPING_GRACE_MS = 3000;

/** The longest selected text a read reports. */
const MAX_SELECTION = 8000;

/** What the sidebar does for the notebooks (provided by the sidebar plugin). */
export interface IAgentSidebar {
  /** Whether panel's kernel is an agentkernel. */
  isAgent(panel: NotebookPanel | null): boolean;
  /**
   * Sends text as the user's prompt into the conversation of panel's
   * kernel, in the sidebar (which it shows). False when it could not.
   */
  prompt(panel: NotebookPanel, text: string): boolean;
  /** Shows the sidebar with its settings view, following panel's kernel. */
  openSettings(panel: NotebookPanel): void;
}

/** The token of the Agent sidebar's service. */
export const IAgentSidebar = new Token<IAgentSidebar>(
  '@agentkernel/jupyterlab:IAgentSidebar',
  "The Agent sidebar: whether a notebook is an agent's, and a prompt into its conversation"
);

/** The commands of the notebook plugin. */
export namespace NotebookCommandIDs {
  /** Asks the agent about the active cell (a question typed in a dialog). */
  export const ask = 'agentkernel:ask-about-cell';
  /** Asks the agent to fix a cell whose run failed (args: cellId, ename, evalue). */
  export const fix = 'agentkernel:fix-cell';
}

/**
 * The prompts the cells send, written once here. The agent answers by
 * changing the cell with notebook_edit_cell: it is the user's cell, so the
 * change is put to the user with its diff first.
 */
export const cellPrompts = {
  ask: (id: string, question: string): string =>
    `${question.trim()}\n\n(About cell ${id} of the notebook: read it with notebook_read; ` +
    `if the answer is a change to it, make it with notebook_edit_cell.)`,
  fix: (id: string, ename: string, evalue: string): string =>
    `Fix cell ${id} of the notebook: running it failed with ${ename}: ${evalue}\n\n` +
    `Read it (and its error) with notebook_read, then correct it with notebook_edit_cell.`
};

// ---- the protocol's types ----

/** A request of the kernel: comm_msg data {"request": …}. */
type Request = { id: string; op: string; args?: Args };

/**
 * The arguments of the requests (each op uses some), as they come: each
 * checked by the op that uses it.
 */
type Args = {
  id?: unknown;
  index?: unknown;
  cell_type?: unknown;
  source?: unknown;
  max_output?: unknown;
  start?: unknown;
  end?: unknown;
  max_chars?: unknown;
  max_image?: unknown;
  outputs?: unknown;
  execution_count?: unknown;
};

/** A cell as the protocol carries it: nbformat's fields, source a string. */
type WireCell = {
  id: string;
  cell_type: string;
  source: string;
  execution_count: number | null;
  outputs: nbformat.IOutput[];
};

/** An error of an operation, with the protocol's code. */
export class OpError extends Error {
  constructor(
    message: string,
    readonly code?: 'no_cell' | 'conflict'
  ) {
    super(message);
  }
}

// ---- reading: outputs cut, images named ----

/** s cut to n characters (UTF-16 units), with how many were left out. */
function cut(s: string, n: number): string {
  if (s.length <= n) {
    return s;
  }
  let head = s.slice(0, n);
  const last = head.charCodeAt(head.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) {
    head = head.slice(0, -1); // never half a surrogate pair
  }
  return head + `\n[… ${s.length - head.length} more characters]`;
}

/** nbformat's multiline string as one string. */
function joined(v: nbformat.MultilineString | undefined): string {
  return Array.isArray(v) ? v.join('') : (v ?? '');
}

/**
 * An output as a read carries it: text cut to max characters, image data
 * emptied (the mime type kept, so the agent knows an image is there) unless
 * the read asked for images of up to maxImage characters of base64, the
 * other kinds of data (HTML, JSON, widgets) left out, no metadata.
 */
export function readOutput(o: nbformat.IOutput, max: number, maxImage = 0): nbformat.IOutput {
  switch (o.output_type) {
    case 'stream':
      return { output_type: 'stream', name: o.name, text: cut(joined(o.text as nbformat.MultilineString), max) };
    case 'error': {
      const tb = cut((o.traceback as string[] | undefined)?.join('\n') ?? '', max);
      return { output_type: 'error', ename: o.ename, evalue: cut(String(o.evalue ?? ''), max), traceback: [tb] };
    }
    case 'execute_result':
    case 'display_data': {
      const data: nbformat.IMimeBundle = {};
      for (const [mime, v] of Object.entries((o.data ?? {}) as nbformat.IMimeBundle)) {
        if (mime.startsWith('image/')) {
          const image = joined(v as nbformat.MultilineString);
          data[mime] = maxImage > 0 && image.length <= maxImage ? image : '';
        } else if (mime === 'text/plain') {
          data[mime] = cut(joined(v as nbformat.MultilineString), max);
        }
      }
      const out: nbformat.IOutput = { output_type: o.output_type, data, metadata: {} };
      if (o.output_type === 'execute_result') {
        out.execution_count = o.execution_count ?? null;
      }
      return out;
    }
    default:
      return { output_type: o.output_type };
  }
}

/** The characters of an output as a read carries it (its texts). */
function outputChars(o: nbformat.IOutput): number {
  switch (o.output_type) {
    case 'stream':
      return (o.text as string).length;
    case 'error':
      return String(o.evalue ?? '').length + ((o.traceback as string[])[0]?.length ?? 0);
    case 'execute_result':
    case 'display_data':
      return joined((o.data as nbformat.IMimeBundle)?.['text/plain'] as nbformat.MultilineString).length;
  }
  return 0;
}

/** A non-negative integer argument, or fallback. */
function count(v: unknown, fallback: number): number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : fallback;
}

/** cell as a read carries it; outputs only when max > 0 (images: readOutput's maxImage). */
function wireCell(cell: ISharedCell, max: number, maxImage = 0): WireCell {
  const code = cell.cell_type === 'code' ? (cell as ISharedCodeCell) : null;
  return {
    id: cell.id,
    cell_type: cell.cell_type,
    source: cell.getSource(),
    execution_count: code ? (code.execution_count ?? null) : null,
    outputs: code && max > 0 ? code.getOutputs().map(o => readOutput(o, max, maxImage)) : []
  };
}

// ---- the user typing ----

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

// ---- the arguments, checked: a malformed request changes nothing ----

/** v, a string argument named name (an error when it is something else). */
function text(name: string, v: unknown): string {
  if (v === undefined || v === null) {
    return '';
  }
  if (typeof v !== 'string') {
    throw new OpError(`${name}: want a string, not ${JSON.stringify(v)}`);
  }
  return v;
}

/**
 * v as an index from 0 to last, in a notebook of cells cells: an error
 * saying which there are when it is not one.
 */
function position(v: unknown, last: number, cells: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > last) {
    throw new OpError(`index ${JSON.stringify(v ?? null)}: the notebook has ${cells} cells (want 0 to ${last})`);
  }
  return v;
}

/** v as nbformat outputs (none when absent). */
function outputsOf(v: unknown): nbformat.IOutput[] {
  if (v === undefined || v === null) {
    return [];
  }
  if (!Array.isArray(v) || v.some(o => !o || typeof o !== 'object' || typeof o.output_type !== 'string')) {
    throw new OpError('outputs: want a list of nbformat outputs');
  }
  return v as nbformat.IOutput[];
}

/** v as an execution count: a positive integer, or null. */
function countOf(v: unknown): number | null {
  if (v === undefined || v === null) {
    return null;
  }
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
    throw new OpError(`execution_count: want a count or null, not ${JSON.stringify(v)}`);
  }
  return v;
}

// ---- the operations ----

/** The undo manager of a shared model (not in ydoc's interfaces). */
function stopCapturing(model: unknown): void {
  (model as { undoManager?: { stopCapturing(): void } | null }).undoManager?.stopCapturing();
}

/**
 * NotebookOps does the protocol's operations on a notebook's shared model.
 * Each change is one transaction of the model, and one step of its undo
 * history (the change before and the one after stay steps of their own).
 * The operations are the ones a rewind needs too: it puts cells back with
 * insert, set_source, move and delete.
 */
export class NotebookOps {
  constructor(
    private readonly panel: NotebookPanel,
    private readonly typing: TypingWatch,
    private readonly localPath: (path: string) => string
  ) {}

  private get model(): ISharedNotebook {
    const m = this.panel.content.model;
    if (!m) {
      throw new OpError('the notebook is not loaded');
    }
    return m.sharedModel;
  }

  /** Does op with args; the result is the reply's. */
  apply(op: string, args: Args): unknown {
    switch (op) {
      case 'read':
        return this.read(args);
      case 'insert':
        return this.insert(args);
      case 'set_source':
        return this.setSource(args);
      case 'move':
        return this.move(args);
      case 'delete':
        return this.delete(args);
      case 'set_outputs':
        return this.setOutputs(args);
    }
    throw new OpError(`unknown op ${JSON.stringify(op)}`);
  }

  /**
   * The notebook, or with max_chars only the cells from start (up to
   * end) that fit in it whole, and the count of all: the rest never
   * leaves the page.
   */
  read(args: Args): unknown {
    const max = Math.max(0, Math.floor(Number(args.max_output) || 0));
    const all = this.model.cells;
    const active = this.panel.content.activeCell;
    const budget = count(args.max_chars, 0);
    const maxImage = count(args.max_image, 0);
    let cells: WireCell[];
    let range: { start: number; count: number; active_index: number } | null = null;
    if (budget > 0) {
      const n = all.length;
      const start = Math.min(count(args.start, 0), n);
      const end = Math.max(start, Math.min(count(args.end, 0) || n, n));
      cells = [];
      let used = 0;
      for (let i = start; i < end; i++) {
        const c = wireCell(all[i], max, maxImage);
        used += c.source.length + c.outputs.reduce((k, o) => k + outputChars(o), 0);
        if (i > start && used > budget) {
          break;
        }
        cells.push(c);
      }
      const id = active?.model.id;
      range = { start, count: n, active_index: id === undefined ? -1 : all.findIndex(c => c.id === id) };
    } else {
      cells = all.map(c => wireCell(c, max));
    }
    let selection = '';
    const editor = active?.editor;
    if (active && editor) {
      const r = editor.getSelection();
      const a = editor.getOffsetAt(r.start);
      const b = editor.getOffsetAt(r.end);
      if (a !== b) {
        selection = cut(active.model.sharedModel.getSource().slice(Math.min(a, b), Math.max(a, b)), MAX_SELECTION);
      }
    }
    return { path: this.localPath(this.panel.context.path), active: active?.model.id ?? '', selection, cells, ...range };
  }

  insert(args: Args): unknown {
    const nb = this.model;
    const index = args.index === undefined || args.index === null ? nb.cells.length : position(args.index, nb.cells.length, nb.cells.length);
    const type = args.cell_type ?? 'code';
    if (type !== 'code' && type !== 'markdown' && type !== 'raw') {
      throw new OpError(`cell_type ${JSON.stringify(type)}: want code, markdown or raw`);
    }
    const source = text('source', args.source);
    // A cell a rewind puts back keeps its id (when no cell has it now),
    // its outputs and its execution count.
    const id = args.id === undefined || args.id === '' ? undefined : text('id', args.id);
    const keep = id !== undefined && !nb.cells.some(c => c.id === id);
    const cell: nbformat.ICell = { cell_type: type, source, metadata: {} };
    if (keep) {
      cell.id = id;
    }
    if (type === 'code') {
      cell.outputs = outputsOf(args.outputs);
      cell.execution_count = countOf(args.execution_count);
    }
    let made: ISharedCell | undefined;
    this.change(nb, () => {
      made = nb.insertCell(index, cell as any);
    });
    return { cell: wireCell(made!, 0) };
  }

  setSource(args: Args): unknown {
    const { cell } = this.find(args.id, 'change');
    if (args.source === undefined || args.source === null) {
      throw new OpError('set_source: no source given (the cell is left as it is)');
    }
    const next = text('source', args.source);
    const before = wireCell(cell, 0);
    const old = before.source;
    // The change as one replacement of what differs (the common start and
    // end kept): a collaborator's cursor outside it stays where it was.
    let start = 0;
    while (start < old.length && start < next.length && old[start] === next[start]) {
      start++;
    }
    let end = 0;
    while (end < old.length - start && end < next.length - start && old[old.length - 1 - end] === next[next.length - 1 - end]) {
      end++;
    }
    if (start !== old.length || start !== next.length) {
      // The cell's own transaction: its undo history (Ctrl+Z in the cell)
      // is the one that tracks its text.
      this.change(cell, () => cell.updateSource(start, old.length - end, next.slice(start, next.length - end)));
    }
    return { before };
  }

  move(args: Args): unknown {
    const nb = this.model;
    // The index is where the cell ends up, counted among the other cells.
    const to = position(args.index, nb.cells.length - 1, nb.cells.length);
    const { index: from } = this.find(args.id, 'move');
    if (to !== from) {
      this.change(nb, () => nb.moveCell(from, to));
    }
    return { from };
  }

  delete(args: Args): unknown {
    const nb = this.model;
    const { cell, index } = this.find(args.id, 'delete');
    // The cell whole, outputs uncut: a rewind puts it back as it was.
    const gone = cell.toJSON() as nbformat.ICell;
    const whole: WireCell = {
      id: cell.id,
      cell_type: cell.cell_type,
      source: cell.getSource(),
      execution_count: cell.cell_type === 'code' ? ((gone as nbformat.ICodeCell).execution_count ?? null) : null,
      outputs: cell.cell_type === 'code' ? ((gone as nbformat.ICodeCell).outputs ?? []) : []
    };
    this.change(nb, () => nb.deleteCell(index));
    return { cell: whole, index };
  }

  setOutputs(args: Args): unknown {
    const { cell } = this.find(args.id);
    if (cell.cell_type !== 'code') {
      throw new OpError(`cell ${cell.id} is a ${cell.cell_type} cell: only a code cell has outputs`);
    }
    const outputs = outputsOf(args.outputs);
    const count = countOf(args.execution_count);
    const code = cell as ISharedCodeCell;
    // Not a step of the undo history: undoing the text must not take the
    // outputs away (JupyterLab's own runs are not undone either).
    this.typing.applying = true;
    try {
      code.transact(() => {
        code.setOutputs(outputs);
        code.execution_count = count;
      }, false);
    } finally {
      this.typing.applying = false;
    }
    return {};
  }

  /**
   * Cell id and its index. what is what the operation does to it: a cell
   * the user is typing in is not changed, moved or deleted (a conflict).
   */
  private find(id: unknown, what?: string): { cell: ISharedCell; index: number } {
    if (typeof id !== 'string' || id === '') {
      throw new OpError(`id: want the id of a cell, not ${JSON.stringify(id ?? null)}`);
    }
    const cells = this.model.cells;
    const index = cells.findIndex(c => c.id === id);
    if (index < 0) {
      throw new OpError(`no cell ${id}`, 'no_cell');
    }
    if (what && this.typing.isTyping(id)) {
      throw new OpError(
        `the user is typing in cell ${id}: not ${what === 'change' ? 'changed' : what === 'move' ? 'moved' : 'deleted'}; try again when they stop`,
        'conflict'
      );
    }
    return { cell: cells[index], index };
  }

  /** Runs f, a change of model's, as one step of its undo history. */
  private change(model: ISharedNotebook | ISharedCell, f: () => void): void {
    this.typing.applying = true;
    try {
      stopCapturing(model);
      model.transact(f);
      stopCapturing(model);
    } finally {
      this.typing.applying = false;
    }
  }
}

// ---- one notebook's comm ----

/**
 * NotebookLink keeps the notebook comm of one notebook open while its
 * kernel is an agentkernel: opened when the kernel is there (and again
 * after a restart or a change of kernel), closed when the kernel goes or
 * is not an agent's, and when the notebook closes. It answers each request
 * at once, in order.
 */
export class NotebookLink {
  private comm: Kernel.IComm | null = null;
  private kernel: Kernel.IKernelConnection | null = null;
  private readonly typing: TypingWatch;
  private readonly ops: NotebookOps;
  private readonly focus: FocusWatch;
  private disposed = false;

  constructor(
    private readonly panel: NotebookPanel,
    private readonly isAgent: (panel: NotebookPanel) => boolean,
    private readonly localPath: (path: string) => string
  ) {
    this.typing = new TypingWatch(panel);
    this.ops = new NotebookOps(panel, this.typing, localPath);
    this.focus = new FocusWatch(panel, f => this.sendFocus(f));
    const ctx = panel.sessionContext;
    ctx.kernelChanged.connect(this.sync, this);
    ctx.statusChanged.connect(this.sync, this);
    ctx.connectionStatusChanged.connect(this.sync, this);
    ctx.specsManager.specsChanged.connect(this.sync, this);
    // Closed with the tab, while the kernel connection can still say so:
    // the session context is disposed before its kernel connection (when
    // the tab was the last view of the notebook, the context goes before
    // the panel's disposed is emitted), the panel when another view keeps
    // the context. Without the comm_close the kernel would keep routing
    // the agent's notebook tools to a page that is gone (issue 41, item 13).
    ctx.disposed.connect(this.dispose, this);
    panel.disposed.connect(this.dispose, this);
    void Promise.all([ctx.ready, panel.context.ready]).then(() => this.sync());
  }

  /** Whether the comm is open. */
  get isOpen(): boolean {
    return this.comm !== null && !this.comm.isDisposed;
  }

  dispose(): void {
    if (this.disposed) {
      return;
    }
    this.disposed = true;
    const ctx = this.panel.sessionContext;
    ctx.kernelChanged.disconnect(this.sync, this);
    ctx.statusChanged.disconnect(this.sync, this);
    ctx.connectionStatusChanged.disconnect(this.sync, this);
    ctx.specsManager.specsChanged.disconnect(this.sync, this);
    ctx.disposed.disconnect(this.dispose, this);
    this.close(true);
    this.typing.dispose();
    this.focus.dispose();
  }

  /** Opens, keeps or closes the comm, as the kernel now is. */
  sync(): void {
    if (this.disposed) {
      return;
    }
    const ctx = this.panel.sessionContext;
    const kernel = ctx.session?.kernel ?? null;
    const status = kernel?.status;
    const up = !!kernel && status !== 'restarting' && status !== 'autorestarting' && status !== 'dead' &&
      status !== 'unknown' && kernel.connectionStatus === 'connected';
    const want = up && this.panel.context.isReady && this.isAgent(this.panel) ? kernel : null;
    if (want === this.kernel && (want === null || this.isOpen)) {
      return;
    }
    if (this.comm && want === this.kernel && !this.isOpen) {
      // The kernel closed it (it speaks another version): not again until
      // the kernel restarts or changes.
      return;
    }
    // A restarting kernel is a new process that knows no comm: say nothing
    // to it (the old comm went with the old process).
    this.close(up);
    this.kernel = want;
    if (want) {
      this.open(want);
    }
  }

  private open(kernel: Kernel.IKernelConnection): void {
    const comm = kernel.createComm(NOTEBOOK_TARGET);
    comm.onMsg = (msg: KernelMessage.ICommMsgMsg) => this.onRequest(comm, msg);
    comm.onClose = (msg: KernelMessage.ICommCloseMsg) => {
      const why = (msg.content.data as { reason?: string } | undefined)?.reason;
      if (why) {
        console.warn(`agentkernel: the kernel closed the notebook comm: ${why}`);
      }
    };
    this.comm = comm;
    comm.open({ protocol: NOTEBOOK_PROTOCOL, path: this.localPath(this.panel.context.path) });
    this.focus.resend();
  }

  /** Tells the kernel where the user is; false when the comm is not open. */
  private sendFocus(focus: Focus): boolean {
    const comm = this.comm;
    if (!comm || comm.isDisposed) {
      return false;
    }
    try {
      comm.send({ focus } as any).dispose();
    } catch {
      return false; // the kernel went: sent again when a comm opens
    }
    return true;
  }

  private close(tell: boolean): void {
    const comm = this.comm;
    this.comm = null;
    this.kernel = null;
    if (!comm || comm.isDisposed) {
      return;
    }
    try {
      if (tell) {
        comm.close();
      } else {
        comm.dispose();
      }
    } catch {
      // the kernel is gone already
    }
  }

  private onRequest(comm: Kernel.IComm, msg: KernelMessage.ICommMsgMsg): void {
    const req = (msg.content.data as { request?: Partial<Request> } | undefined)?.request;
    if (!req || typeof req !== 'object' || typeof req.id !== 'string') {
      // Nothing to answer to: the kernel's request times out.
      console.warn('agentkernel: a notebook request without an id', msg.content.data);
      return;
    }
    let reply: Record<string, unknown>;
    try {
      const args = req.args ?? {};
      if (typeof args !== 'object' || Array.isArray(args)) {
        throw new OpError(`${req.op}: args: want an object, not ${JSON.stringify(args)}`);
      }
      const result = this.ops.apply(String(req.op), args);
      reply = { id: req.id, ok: true, result };
    } catch (e) {
      const err = e instanceof OpError ? e : new OpError(`${req.op}: ${(e as Error)?.message ?? e}`);
      reply = { id: req.id, ok: false, error: err.message };
      if (err.code) {
        reply.code = err.code;
      }
    }
    if (comm.isDisposed) {
      return;
    }
    // No reply comes to a comm message: the future is let go at once
    // (the kernel publishes no status for our comm's messages).
    comm.send({ reply } as any).dispose();
  }
}

// ---- the cells talk to the agent ----

/** The mime type JupyterLab gives an error output (beside its text, as stderr). */
const ERROR_MIME = 'application/vnd.jupyter.error';

/**
 * The errors of the kernel's configuration (surface/bridge/prompt.go's ename for
 * no model): the settings mend them, not the agent, so their output
 * offers the settings and no "Fix with the agent".
 */
const SETTINGS_ERRORS = new Set(['NoModelConfigured']);

/** The class a notebook on an agent kernel wears: the Fix buttons show in it. */
const AGENT_NOTEBOOK_CLASS = 'ak-agent-notebook';

/**
 * An error output as JupyterLab shows it (its traceback, as stderr), with
 * a "Fix with the agent" button under it; a configuration error
 * (SETTINGS_ERRORS) gets "Open Settings" instead. The buttons show only in
 * a notebook on an agent kernel (its panel wears AGENT_NOTEBOOK_CLASS).
 */
class RenderedErrorWithFix extends RenderedError {
  constructor(
    options: IRenderMime.IRendererOptions,
    private readonly onFix: (node: HTMLElement, ename: string, evalue: string) => void,
    private readonly onSettings: (node: HTMLElement) => void
  ) {
    // The text is the stderr of the bundle, shown (and styled) as
    // JupyterLab shows every error.
    super({ ...options, mimeType: 'application/vnd.jupyter.stderr' });
    this.addClass('ak-error');
  }

  async render(model: IRenderMime.IMimeModel): Promise<void> {
    await super.render(model);
    const err = (model.data[ERROR_MIME] ?? {}) as { ename?: string; evalue?: string };
    if (SETTINGS_ERRORS.has(err.ename ?? '')) {
      const open = document.createElement('button');
      open.type = 'button';
      open.className = 'jp-Button ak-fix ak-open-settings';
      open.textContent = 'Open Settings';
      open.title = "Pick a model and save its key or server URL in the Agent sidebar's settings (no restart)";
      open.addEventListener('click', () => this.onSettings(this.node));
      this.node.appendChild(open);
      return;
    }
    const fix = document.createElement('button');
    fix.type = 'button';
    fix.className = 'jp-Button ak-fix';
    fix.textContent = 'Fix with the agent';
    fix.title = 'Ask the agent to fix this cell (you review its change in the Agent sidebar)';
    fix.addEventListener('click', () => this.onFix(this.node, err.ename ?? 'Error', err.evalue ?? ''));
    this.node.appendChild(fix);
  }
}

/** The notebook and the cell an output node is in, if any. */
function locate(tracker: INotebookTracker, node: HTMLElement): { panel: NotebookPanel; cell: Cell } | null {
  const panel = tracker.find(p => p.node.contains(node));
  const cell = panel?.content.widgets.find(c => c.node.contains(node));
  return panel && cell ? { panel, cell } : null;
}

/** The notebook that holds cell id: the current one first. */
function notebookOf(tracker: INotebookTracker, id: string): NotebookPanel | null {
  const has = (p: NotebookPanel | null) => !!p?.content.model?.sharedModel.cells.some(c => c.id === id);
  const current = tracker.currentWidget;
  return has(current) ? current : (tracker.find(has) ?? null);
}

/**
 * The notebook plugin: the notebook comm of every agent notebook, "Ask the
 * agent" (the cell toolbar, schema/notebook.json) and "Fix with the agent"
 * (under each error output).
 */
export const notebookPlugin: JupyterFrontEndPlugin<void> = {
  id: '@agentkernel/jupyterlab:notebook',
  description: "The agent's notebook tools on the notebook's shared model, and cells that ask the agent",
  autoStart: true,
  requires: [INotebookTracker, IRenderMimeRegistry, IAgentSidebar],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker, rendermime: IRenderMimeRegistry, sidebar: IAgentSidebar) => {
    const localPath = (path: string) => app.serviceManager.contents.localPath(path);
    const isAgent = (panel: NotebookPanel) => {
      const agent = sidebar.isAgent(panel);
      panel.toggleClass(AGENT_NOTEBOOK_CLASS, agent);
      return agent;
    };
    const links = new Set<NotebookLink>();
    const link = (panel: NotebookPanel) => {
      const l = new NotebookLink(panel, isAgent, localPath);
      links.add(l);
      panel.disposed.connect(() => links.delete(l));
    };
    tracker.forEach(link);
    tracker.widgetAdded.connect((_, panel) => link(panel));
    // A page that goes (closed, reloaded) closes its comms: the kernel
    // then fails the agent's call at once, instead of after waiting for
    // an answer that cannot come.
    window.addEventListener('pagehide', () => links.forEach(l => l.dispose()));

    const icon = LabIcon.resolve({ icon: 'agentkernel:agent' });
    app.commands.addCommand(NotebookCommandIDs.ask, {
      label: 'Ask the agent',
      caption: 'Ask the agent about this cell: it answers in the Agent sidebar, and a change to the cell is yours to review',
      icon,
      isVisible: () => sidebar.isAgent(tracker.currentWidget),
      execute: async () => {
        const panel = tracker.currentWidget;
        const cell = panel?.content.activeCell;
        if (!panel || !cell || !sidebar.isAgent(panel)) {
          return;
        }
        const id = cell.model.id;
        const answer = await InputDialog.getText({
          title: 'Ask the agent',
          label: `About cell [${panel.content.activeCellIndex + 1}] (its id ${id}):`,
          placeholder: 'What should the agent do with this cell, or tell you about it?',
          okLabel: 'Ask'
        });
        if (answer.button.accept && answer.value?.trim()) {
          sidebar.prompt(panel, cellPrompts.ask(id, answer.value));
        }
      }
    });
    app.commands.addCommand(NotebookCommandIDs.fix, {
      label: 'Fix with the agent',
      caption: 'Ask the agent to fix the cell whose run failed',
      icon,
      isVisible: () => sidebar.isAgent(tracker.currentWidget),
      execute: args => {
        const id = String(args.cellId ?? tracker.activeCell?.model.id ?? '');
        const panel = notebookOf(tracker, id);
        if (!panel || !sidebar.isAgent(panel)) {
          return;
        }
        sidebar.prompt(panel, cellPrompts.fix(id, String(args.ename ?? 'Error'), String(args.evalue ?? '')));
      }
    });

    // Ranked before JupyterLab's stderr renderer: an error's bundle has
    // both, and this one shows the same text with the button.
    rendermime.addFactory(
      {
        safe: true,
        mimeTypes: [ERROR_MIME],
        defaultRank: 100,
        createRenderer: options =>
          new RenderedErrorWithFix(options, (node, ename, evalue) => {
            const at = locate(tracker, node);
            if (at) {
              at.panel.content.activeCellIndex = at.panel.content.widgets.indexOf(at.cell);
              void app.commands.execute(NotebookCommandIDs.fix, { cellId: at.cell.model.id, ename, evalue });
            }
          }, node => {
            const at = locate(tracker, node);
            if (at && sidebar.isAgent(at.panel)) {
              sidebar.openSettings(at.panel);
            }
          })
      },
      100
    );
  }
};
