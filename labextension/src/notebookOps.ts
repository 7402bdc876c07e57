// The notebook comm's operations (docs/notebook-protocol.md) on a
// notebook's shared model: read, insert, set_source, move, delete and
// set_outputs, each change one transaction and one step of the undo
// history. Also the protocol's types and what a read carries of a cell
// (outputs cut, images named). NotebookLink (notebook.ts) answers the
// kernel's requests with NotebookOps.apply.
import * as nbformat from '@jupyterlab/nbformat';
import { NotebookPanel } from '@jupyterlab/notebook';
import { ISharedCell, ISharedCodeCell, ISharedNotebook } from '@jupyter/ydoc';

import { TypingWatch } from './typing';

/** The longest selected text a read reports. */
const MAX_SELECTION = 8000;

// ---- the protocol's types ----

/** A request of the kernel: comm_msg data {"request": …}. */
export type Request = { id: string; op: string; args?: Args };

/**
 * The arguments of the requests (each op uses some), as they come: each
 * checked by the op that uses it.
 */
export type Args = {
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

/**
 * The most of an output's text the kernel's mirror is sent (UTF-16 units,
 * nbcomm.MirrorText): a longer one is cut as a read cuts it, and its cell
 * marked cut (a read that wants it asks the page).
 */
export const MIRROR_TEXT = 32000;

/** The length of an output's text before a read cuts it. */
function rawChars(o: nbformat.IOutput): number {
  switch (o.output_type) {
    case 'stream':
      return joined(o.text as nbformat.MultilineString).length;
    case 'error':
      return Math.max(String(o.evalue ?? '').length, (o.traceback as string[] | undefined)?.join('\n').length ?? 0);
    case 'execute_result':
    case 'display_data':
      return joined((o.data as nbformat.IMimeBundle | undefined)?.['text/plain'] as nbformat.MultilineString).length;
  }
  return 0;
}

/**
 * cell as the kernel's mirror is sent it (a snapshot's or a change's):
 * as a read with max_output MIRROR_TEXT carries it (image data emptied,
 * the mime type kept), cut when one of its texts was cut.
 */
export function mirrorCell(cell: ISharedCell): WireCell & { cut?: true } {
  const c: WireCell & { cut?: true } = wireCell(cell, MIRROR_TEXT);
  if (cell.cell_type === 'code' && (cell as ISharedCodeCell).getOutputs().some(o => rawChars(o) > MIRROR_TEXT)) {
    c.cut = true;
  }
  return c;
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
