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
// Where things are: NotebookLink (here) is one notebook's comm (it opens,
// closes and reopens it as the kernel comes and goes) and answers the
// requests with NotebookOps (notebookOps.ts), which does the operations on
// the model; TypingWatch (typing.ts) tells whether the user is typing in a
// cell (a conflict); the commands Ask and Fix are cellActions.ts's, the
// error output's buttons errorButtons.ts's; notebookPlugin (here) wires
// them.
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { Kernel, KernelMessage } from '@jupyterlab/services';

import { IAgentSidebar } from './agentSidebar';
import { addCellCommands } from './cellActions';
import { AGENT_NOTEBOOK_CLASS, addErrorButtons } from './errorButtons';
import { Focus, FocusWatch } from './focus';
import { MIRROR_CAPABILITY, MirrorFeed } from './mirror';
import { NotebookOps, OpError, Request } from './notebookOps';
import { TypingWatch } from './typing';

/** The kernel's comm target of the notebook (bridge.NotebookTarget). */
export const NOTEBOOK_TARGET = 'agentkernel.notebook';

/** The version of the notebook comm's protocol spoken here. */
export const NOTEBOOK_PROTOCOL = 1;

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
  private readonly mirror: MirrorFeed;
  private disposed = false;

  constructor(
    private readonly panel: NotebookPanel,
    private readonly isAgent: (panel: NotebookPanel) => boolean,
    private readonly localPath: (path: string) => string
  ) {
    this.typing = new TypingWatch(panel);
    this.ops = new NotebookOps(panel, this.typing, localPath);
    this.focus = new FocusWatch(panel, f => this.sendFocus(f));
    this.mirror = new MirrorFeed(panel, data => this.sendData(data));
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
    this.mirror.dispose();
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
    comm.open({ protocol: NOTEBOOK_PROTOCOL, path: this.localPath(this.panel.context.path), mirror: MIRROR_CAPABILITY });
    this.mirror.snapshot();
    this.focus.resend();
  }

  /** Tells the kernel where the user is; false when the comm is not open. */
  private sendFocus(focus: Focus): boolean {
    return this.sendData({ focus });
  }

  /** Sends data on the comm; false when it is not open. */
  private sendData(data: Record<string, unknown>): boolean {
    const comm = this.comm;
    if (!comm || comm.isDisposed) {
      return false;
    }
    try {
      comm.send(data as any).dispose();
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
    const data = msg.content.data as { request?: Partial<Request>; resync?: boolean } | undefined;
    if (data?.resync) {
      this.mirror.snapshot(); // the kernel's mirror missed a change
      return;
    }
    const req = data?.request;
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
    // The change an operation made comes with the reply, and the reply
    // says its version: the kernel's mirror shows a write once its reply
    // comes.
    const changes = this.mirror.take();
    reply.version = this.mirror.version;
    // No reply comes to a comm message: the future is let go at once
    // (the kernel publishes no status for our comm's messages).
    comm.send((changes ? { reply, changes } : { reply }) as any).dispose();
  }
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

    addCellCommands(app, tracker, sidebar);
    addErrorButtons(app, tracker, rendermime, sidebar);
  }
};
