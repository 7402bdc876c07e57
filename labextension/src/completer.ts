// Inline completions (ghost text) from the agent kernel, through
// JupyterLab's inline completer (JupyterLab ≥ 4.1, Notebook 7). The kernel
// builds the prompt: the cell around the cursor, the cells near it, and
// what no completer that reads the editor alone knows — the live kernel's
// variables, a DataFrame's columns, the signatures of the user's functions
// (docs/notebook-protocol.md, "Inline completions").
//
// One comm per kernel connection (target agentkernel.complete), opened at
// the first completion asked of that kernel: a notebook whose completions
// are off (the setting, or JupyterLab's per-provider switch) opens none and
// costs nothing. Each keystroke cancels the request still open (a cancel
// frame, its promise resolved empty) and waits `delay` ms; only the last
// keystroke's request is sent. A kernel that answers code "off" (no model)
// is asked nothing more until it says "on" (a model was picked, a key
// saved) or restarts. In prompt mode the kernel completes %%code cells
// only: the cell's text goes as it is, the kernel decides.
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import {
  CompletionHandler,
  ICompletionProviderManager,
  IInlineCompletionContext,
  IInlineCompletionList,
  IInlineCompletionProvider,
  InlineCompletionTriggerKind
} from '@jupyterlab/completer';
import { NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { LabIcon } from '@jupyterlab/ui-components';

/** The kernel's comm target of inline completions (bridge.CompleteTarget). */
export const COMPLETE_TARGET = 'agentkernel.complete';

/** The plugin's id; its settings are schema/completer.json. */
export const COMPLETER_PLUGIN_ID = '@agentkernel/jupyterlab:completer';

/** Bounds of what one request carries; the kernel keeps less. */
export const LIMITS = {
  prefix: 32 * 1024, // the cell before the cursor (its first line is kept too: %%code)
  suffix: 8 * 1024, // the cell after the cursor
  context: 16 * 1024, // the cells above, and the cells below, each side
  cells: 20 // cells each side
};

/** How long a request may stay unanswered before it is given up (ms). */
const GIVE_UP = 15000;

const EMPTY: IInlineCompletionList = { items: [] };

/**
 * A request as the kernel takes it (without its id). cellType is the
 * active cell's type: only a code cell is completed, and the kernel refuses
 * any other (issue 41, item 14).
 */
type Request = { cellType: string; prefix: string; suffix: string; before: string[]; after: string[] };

type Reply = { id?: string; ok?: boolean; text?: string; error?: string; code?: string };

/**
 * The kernel of panel when it is an agentkernel (its kernelspec's
 * metadata says so), else null.
 */
function agentKernel(panel: NotebookPanel): Kernel.IKernelConnection | null {
  const ctx = panel.sessionContext;
  const kernel = ctx.session?.kernel;
  if (!kernel) {
    return null;
  }
  const spec = ctx.specsManager.specs?.kernelspecs[kernel.name];
  return (spec?.metadata as { agentkernel?: unknown } | undefined)?.agentkernel ? kernel : null;
}

/**
 * The completion comm of one kernel connection: requests out, replies in.
 * A request's promise resolves with the text to insert ("" for none),
 * also when it is cancelled, fails or the comm goes.
 */
export class CompleteChannel {
  /** The kernel said there is no model: ask nothing until it says "on". */
  off = false;
  private comm: Kernel.IComm | null = null;
  private readonly waiting = new Map<string, (text: string) => void>();
  private warned = '';

  constructor(private readonly kernel: Kernel.IKernelConnection) {}

  /** Sends request as id; resolves with the text to insert. */
  ask(id: string, request: Request): Promise<string> {
    return new Promise(resolve => {
      this.waiting.set(id, resolve);
      try {
        this.open().send({ request: { id, ...request } });
      } catch (e) {
        this.settle(id, ''); // the kernel is gone
      }
    });
  }

  /** Gives up request id: resolved empty, and the kernel stops it. */
  cancel(id: string): void {
    if (!this.waiting.has(id)) {
      return;
    }
    this.settle(id, '');
    try {
      this.comm?.send({ cancel: id });
    } catch {
      // the kernel is gone: nothing runs there
    }
  }

  /** Closes the comm; what waits resolves empty. */
  dispose(): void {
    for (const id of [...this.waiting.keys()]) {
      this.settle(id, '');
    }
    const comm = this.comm;
    this.comm = null;
    if (comm && !comm.isDisposed) {
      try {
        comm.close();
      } catch {
        // the kernel is gone already
      }
    }
  }

  private open(): Kernel.IComm {
    if (this.comm && !this.comm.isDisposed) {
      return this.comm;
    }
    const comm = this.kernel.createComm(COMPLETE_TARGET);
    comm.onMsg = (msg: KernelMessage.ICommMsgMsg) => this.onMessage(msg.content.data as { reply?: Reply; on?: boolean });
    comm.onClose = () => {
      if (this.comm === comm) {
        this.comm = null;
        for (const id of [...this.waiting.keys()]) {
          this.settle(id, '');
        }
      }
    };
    comm.open({});
    this.comm = comm;
    return comm;
  }

  private onMessage(data: { reply?: Reply; on?: boolean }): void {
    if (data.on) {
      this.off = false;
    }
    const r = data.reply;
    if (!r || typeof r.id !== 'string') {
      return;
    }
    if (!r.ok) {
      if (r.code === 'off') {
        this.off = true;
      } else if (r.error && r.error !== this.warned) {
        // Once per kind of failure (a broken key, a model that times out),
        // not at every keystroke.
        this.warned = r.error;
        console.warn('agentkernel: inline completion failed:', r.error);
      }
    }
    this.settle(r.id, r.ok && typeof r.text === 'string' ? r.text : '');
  }

  private settle(id: string, text: string): void {
    const resolve = this.waiting.get(id);
    if (resolve) {
      this.waiting.delete(id);
      resolve(text);
    }
  }
}

/** A JavaScript string index of a code-point offset (the completer's offsets count code points). */
function jsIndex(text: string, offset: number): number {
  let i = 0;
  for (let n = 0; n < offset && i < text.length; n++) {
    const c = text.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff && i + 1 < text.length ? 2 : 1;
  }
  return i;
}

/**
 * The cell around the cursor, bounded: a long prefix keeps its first line
 * (where %%code is) and its end; a long suffix its start.
 */
export function cellParts(text: string, offset: number): { prefix: string; suffix: string } {
  const at = jsIndex(text, offset);
  let prefix = text.slice(0, at);
  if (prefix.length > LIMITS.prefix) {
    const nl = prefix.indexOf('\n');
    const first = nl >= 0 && nl < 200 ? prefix.slice(0, nl) : '';
    prefix = first + '\n' + prefix.slice(prefix.length - LIMITS.prefix);
  }
  return { prefix, suffix: text.slice(at, at + LIMITS.suffix) };
}

/** The sources of the code cells above and below the active cell, nearest last and first, bounded. */
function neighbours(panel: NotebookPanel): { before: string[]; after: string[] } {
  const nb = panel.content;
  const cells = nb.widgets;
  const active = nb.activeCellIndex;
  const take = (from: number, step: number): string[] => {
    const out: string[] = [];
    let budget = LIMITS.context;
    for (let i = from; i >= 0 && i < cells.length && out.length < LIMITS.cells && budget > 0; i += step) {
      const m = cells[i].model;
      if (m.type !== 'code') {
        continue;
      }
      let src = m.sharedModel.getSource();
      if (src.length > budget) {
        src = step < 0 ? src.slice(src.length - budget) : src.slice(0, budget);
      }
      budget -= src.length;
      out.push(src);
    }
    return step < 0 ? out.reverse() : out;
  };
  return { before: take(active - 1, -1), after: take(active + 1, 1) };
}

/** The provider: JupyterLab's inline completer asks it at every keystroke. */
export class AgentInlineProvider implements IInlineCompletionProvider {
  readonly identifier = 'agentkernel';
  readonly name = 'Agent kernel';
  readonly icon = LabIcon.resolve({ icon: 'agentkernel:agent' });

  /** Whether completions are on (the setting inlineCompletions). */
  enabled = true;
  /** How long after a keystroke the request goes (ms; the setting delay). */
  delay = 250;

  private readonly channels = new Map<Kernel.IKernelConnection, CompleteChannel>();
  private seq = 0;
  private open: { channel: CompleteChannel; id: string } | null = null;

  /** Applies the settings: off closes every comm. */
  configureFrom(enabled: boolean, delay: number): void {
    this.enabled = enabled;
    this.delay = Math.max(0, delay);
    if (!enabled) {
      this.cancelOpen();
      this.channels.forEach(c => c.dispose());
      this.channels.clear();
    }
  }

  async fetch(request: CompletionHandler.IRequest, context: IInlineCompletionContext): Promise<IInlineCompletionList> {
    // A keystroke: what is still open is moot.
    const seq = ++this.seq;
    this.cancelOpen();
    const panel = context.widget;
    if (!this.enabled || !(panel instanceof NotebookPanel)) {
      return EMPTY;
    }
    const kernel = agentKernel(panel);
    if (!kernel) {
      return EMPTY;
    }
    const channel = this.channel(kernel);
    if (channel.off) {
      return EMPTY;
    }
    if (context.triggerKind !== InlineCompletionTriggerKind.Invoke && this.delay > 0) {
      await new Promise(r => setTimeout(r, this.delay));
      if (seq !== this.seq) {
        return EMPTY; // typed on
      }
    }
    const cell = panel.content.activeCell;
    if (cell?.model.type !== 'code') {
      return EMPTY; // markdown and raw cells are prose: nothing asked
    }
    const id = 'c' + seq + '-' + Date.now().toString(36);
    const { prefix, suffix } = cellParts(request.text, request.offset);
    const { before, after } = neighbours(panel);
    this.open = { channel, id };
    // Typed on where JupyterLab asks nothing (a blank line start): cancel
    // all the same.
    const changed = () => this.open?.id === id && this.cancelOpen();
    cell?.model.contentChanged.connect(changed);
    const giveUp = setTimeout(() => this.open?.id === id && this.cancelOpen(), GIVE_UP);
    try {
      const text = await channel.ask(id, { cellType: cell.model.type, prefix, suffix, before, after });
      return seq === this.seq && text ? { items: [{ insertText: text }] } : EMPTY;
    } finally {
      clearTimeout(giveUp);
      cell?.model.contentChanged.disconnect(changed);
      if (this.open?.id === id) {
        this.open = null;
      }
    }
  }

  /** The channel of kernel, made at its first use and dropped when the kernel restarts or goes. */
  private channel(kernel: Kernel.IKernelConnection): CompleteChannel {
    let c = this.channels.get(kernel);
    if (c) {
      return c;
    }
    c = new CompleteChannel(kernel);
    const made = c;
    this.channels.set(kernel, made);
    const drop = () => {
      if (this.channels.get(kernel) === made) {
        this.channels.delete(kernel);
        made.dispose();
      }
      kernel.statusChanged.disconnect(onStatus);
      kernel.disposed.disconnect(drop);
    };
    // A restarted kernel is a new process: its comms are gone, and it may
    // have a model now.
    const onStatus = (_: Kernel.IKernelConnection, status: Kernel.Status) => {
      if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
        drop();
      }
    };
    kernel.statusChanged.connect(onStatus);
    kernel.disposed.connect(drop);
    return made;
  }

  private cancelOpen(): void {
    const o = this.open;
    this.open = null;
    o?.channel.cancel(o.id);
  }
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: COMPLETER_PLUGIN_ID,
  description: 'Inline completions from the agent kernel, which knows the live variables, DataFrame columns and signatures',
  autoStart: true,
  requires: [ICompletionProviderManager],
  optional: [ISettingRegistry],
  activate: (_app: JupyterFrontEnd, manager: ICompletionProviderManager, settings: ISettingRegistry | null) => {
    // Registered now, before JupyterLab is restored: the inline completer
    // reads the providers there are then, and enables each by default.
    const provider = new AgentInlineProvider();
    manager.registerInlineProvider(provider);
    settings
      ?.load(COMPLETER_PLUGIN_ID)
      .then(s => {
        const read = () =>
          provider.configureFrom(s.get('inlineCompletions').composite !== false, Number(s.get('delay').composite ?? 250));
        read();
        s.changed.connect(read);
      })
      .catch(reason => console.warn('agentkernel: the completion settings could not be read', reason));
  }
};

export default plugin;
