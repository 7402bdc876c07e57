// agentkernel's agent panel as a JupyterLab 4 / Notebook 7 sidebar. The
// panel itself is the web panel's page (surface/webview/static), in a sandboxed
// iframe; this plugin carries its frames over a comm to the active
// notebook's kernel (target agentkernel.panel), so it works wherever the
// notebook does: a remote server, JupyterHub, a gateway. No token: the
// comm is the notebook's own connection. The page wears JupyterLab's theme:
// the plugin gives it the theme's --jp-* values, and again at each change.
//
// As the shell's conventions go: its tab wears a LabIcon (agentIcon, whose
// paths take the theme's colours through jp-icon3), the command palette
// has "Open Agent Sidebar" (category Agent) with a shortcut, the layout
// restorer brings the sidebar back as it was left, and whether it opens by
// itself for an Agent notebook is the setting autoOpen (schema/plugin.json,
// in the Settings Editor, where the shortcut can be changed too).
import { ILabShell, ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, IThemeManager } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import agentSvg from '../style/icons/agent.svg';
import { IAgentSidebar } from './agentSidebar';
import completer from './completer';
import { notebookPlugin } from './notebook';
import { panelHTML, panelThemeVars } from './panelAssets';

/** The kernel's comm target of the panel (bridge.PanelTarget). */
export const PANEL_TARGET = 'agentkernel.panel';

/** The plugin's id; its settings are schema/plugin.json. */
export const PLUGIN_ID = '@agentkernel/jupyterlab:plugin';

/** The commands of the plugin. */
export namespace CommandIDs {
  /** Opens (shows and activates) the Agent sidebar. */
  export const open = 'agentkernel:open-sidebar';
}

/** The Agent's icon: a speech bubble with a spark, in the theme's colours. */
export const agentIcon = new LabIcon({ name: 'agentkernel:agent', svgstr: agentSvg });

/** A theme as the panel wears it: light or dark, and its --jp-* values. */
export type PanelTheme = { light: boolean; vars: Record<string, string> };

type ToPanel = { akStatus?: 'open' | 'closed'; reason?: string; akFrames?: string; akTheme?: PanelTheme; akShow?: 'settings' };

/**
 * The current theme: the values of the --jp-* variables that the panel's
 * CSS uses (panelThemeVars), as JupyterLab computes them (the user's font
 * size overrides included), and whether the theme is light.
 */
export function currentTheme(themes: IThemeManager | null): PanelTheme {
  const style = getComputedStyle(document.body);
  const vars: Record<string, string> = {};
  for (const name of panelThemeVars) {
    const value = style.getPropertyValue(name).trim();
    if (value) {
      vars[name] = value;
    }
  }
  const name = themes?.theme;
  const light = themes && name ? themes.isLight(name) : document.body.dataset.jpThemeLight !== 'false';
  return { light, vars };
}

/** The sidebar: the panel's page, and the comm it speaks through. */
export class AgentSidebar extends Widget {
  private readonly frame: HTMLIFrameElement;
  private comm: Kernel.IComm | null = null;
  private kernel: Kernel.IKernelConnection | null = null;
  private ready = false;
  private queue: ToPanel[] = [];
  private readonly themes: IThemeManager | null;

  /** themes: JupyterLab's theme manager, if there is one (else the body's data-jp-theme-light). */
  constructor(themes: IThemeManager | null = null) {
    super();
    this.themes = themes;
    this.id = 'agentkernel-sidebar';
    // The tab shows the icon; the caption is its tooltip, what a screen
    // reader says, and Notebook 7's View > Right Sidebar > "Show Agent".
    this.title.icon = agentIcon;
    this.title.caption = 'Agent';
    this.addClass('ak-sidebar');
    this.frame = document.createElement('iframe');
    // Scripts only: the page gets an opaque origin, so it reaches nothing
    // of JupyterLab's but what this plugin relays.
    this.frame.setAttribute('sandbox', 'allow-scripts');
    this.frame.title = 'agentkernel panel';
    this.frame.srcdoc = panelHTML;
    this.node.appendChild(this.frame);
    window.addEventListener('message', this.onMessage);
  }

  /** Called with the kernel to follow when the sidebar is shown again. */
  onShown: () => void = () => undefined;

  dispose(): void {
    window.removeEventListener('message', this.onMessage);
    this.attach(null);
    super.dispose();
  }

  // A hidden sidebar lets go of the kernel: its asks then go to the
  // notebook's stdin prompt, where the user sees them. Only the sidebar's
  // own hiding counts: JupyterLab hides its whole shell for a moment when
  // the theme changes, which must not take the panel's asks away.
  protected onAfterHide(): void {
    if (this.isHidden) {
      this.attach(null, 'The sidebar was closed.');
    }
  }

  protected onAfterShow(): void {
    this.onShown();
  }

  /** The kernel the panel follows; null: none (not an agent kernel). */
  get current(): Kernel.IKernelConnection | null {
    return this.kernel;
  }

  /** Follows kernel: closes the old comm and opens one to kernel. */
  attach(kernel: Kernel.IKernelConnection | null, reason?: string): void {
    if (kernel === this.kernel && (kernel === null || this.comm !== null)) {
      return;
    }
    if (this.comm) {
      const old = this.comm;
      this.comm = null;
      try {
        old.close();
      } catch {
        // the kernel is gone already
      }
    }
    this.kernel = kernel;
    if (!kernel) {
      this.post({ akStatus: 'closed', reason: reason ?? 'No agent kernel: open a notebook on an Agent kernel.' });
      return;
    }
    const comm = kernel.createComm(PANEL_TARGET);
    comm.onMsg = (msg: KernelMessage.ICommMsgMsg) => {
      const frame = (msg.content.data as { frame?: unknown }).frame;
      if (frame !== undefined) {
        this.post({ akFrames: JSON.stringify(frame) });
      }
    };
    comm.onClose = (msg: KernelMessage.ICommCloseMsg) => {
      if (this.comm === comm) {
        this.comm = null;
        const why = (msg.content.data as { reason?: string }).reason;
        this.post({ akStatus: 'closed', reason: 'The kernel closed the panel' + (why ? ': ' + why : '') + '.' });
      }
    };
    this.comm = comm;
    comm.open({});
    this.post({ akStatus: 'open' });
  }

  /**
   * Sends text as the user's prompt (a newTask frame) to the agent of
   * kernel, following it; false when no comm could be opened.
   */
  prompt(kernel: Kernel.IKernelConnection, text: string): boolean {
    this.attach(kernel);
    if (!this.comm) {
      return false;
    }
    this.comm.send({ frame: { type: 'newTask', text } });
    return true;
  }

  /** Shows the page's settings view, following kernel. */
  openSettings(kernel: Kernel.IKernelConnection): void {
    this.attach(kernel);
    this.post({ akShow: 'settings' });
  }

  /** Gives the page the current theme: call it when the theme changes. */
  updateTheme(): void {
    // Before the page is ready there is nobody to tell: it gets the theme
    // when it says it is.
    if (this.ready) {
      this.post({ akTheme: currentTheme(this.themes) });
    }
  }

  private post(msg: ToPanel): void {
    if (!this.ready) {
      this.queue.push(msg);
      return;
    }
    this.frame.contentWindow?.postMessage(msg, '*');
  }

  private readonly onMessage = (ev: MessageEvent): void => {
    if (ev.source !== this.frame.contentWindow || !ev.data || typeof ev.data !== 'object') {
      return;
    }
    if (ev.data.akReady) {
      this.ready = true;
      this.updateTheme();
      const queued = this.queue;
      this.queue = [];
      queued.forEach(m => this.post(m));
      if (!this.kernel && queued.length === 0) {
        this.post({ akStatus: 'closed' });
      }
      return;
    }
    if (typeof ev.data.akFrame === 'string' && this.comm) {
      let frame: unknown;
      try {
        frame = JSON.parse(ev.data.akFrame);
      } catch {
        return;
      }
      this.comm.send({ frame } as any);
    }
  };
}

/** Whether the notebook's kernel is an agentkernel: its kernelspec says so. */
function isAgentKernel(panel: NotebookPanel | null): boolean {
  const ctx = panel?.sessionContext;
  const name = ctx?.session?.kernel?.name;
  if (!ctx || !name) {
    return false;
  }
  const spec = ctx.specsManager.specs?.kernelspecs[name];
  return !!(spec?.metadata as { agentkernel?: unknown } | undefined)?.agentkernel;
}

const plugin: JupyterFrontEndPlugin<IAgentSidebar> = {
  id: PLUGIN_ID,
  description: "agentkernel's agent panel in the right sidebar, following the active notebook",
  autoStart: true,
  provides: IAgentSidebar,
  requires: [INotebookTracker],
  optional: [ILabShell, IThemeManager, ICommandPalette, ILayoutRestorer, ISettingRegistry],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    _shell: ILabShell | null,
    themes: IThemeManager | null,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    settings: ISettingRegistry | null
  ): IAgentSidebar => {
    const sidebar = new AgentSidebar(themes);
    // A theme changes (a new one, or a font size): the page follows.
    themes?.themeChanged.connect(() => sidebar.updateTheme(), sidebar);
    app.shell.add(sidebar, 'right', { rank: 900 });
    // The layout restorer puts the sidebar back as it was (open or not,
    // its size) when JupyterLab is loaded again.
    restorer?.add(sidebar, sidebar.id);

    app.commands.addCommand(CommandIDs.open, {
      label: 'Open Agent Sidebar',
      caption: "Show the agent of the active notebook's kernel in the right sidebar",
      icon: agentIcon,
      execute: () => app.shell.activateById(sidebar.id)
    });
    palette?.addItem({ command: CommandIDs.open, category: 'Agent' });

    // Whether the sidebar opens by itself for an Agent notebook: the
    // setting, as the user last set it (true until it is read).
    let autoOpen = true;
    const settingsRead = settings
      ? settings
          .load(PLUGIN_ID)
          .then(s => {
            const read = () => {
              autoOpen = s.get('autoOpen').composite !== false;
            };
            read();
            s.changed.connect(read);
          })
          .catch(reason => console.warn('agentkernel: the sidebar settings could not be read', reason))
      : Promise.resolve();

    const opened = new WeakSet<NotebookPanel>(); // notebooks it opened for once
    const follow = () => {
      const panel = tracker.currentWidget;
      const opens = autoOpen && !!panel && !opened.has(panel);
      if (!isAgentKernel(panel) || (sidebar.isHidden && !opens)) {
        sidebar.attach(null);
        return;
      }
      sidebar.attach(panel!.sessionContext.session!.kernel!);
      if (opens) {
        opened.add(panel!);
        app.shell.activateById(sidebar.id);
      }
    };
    const watch = (panel: NotebookPanel) => {
      const ctx = panel.sessionContext;
      ctx.kernelChanged.connect(() => tracker.currentWidget === panel && follow());
      ctx.statusChanged.connect((_, status) => {
        // A restarted kernel is a new process: open the comm again.
        if (tracker.currentWidget === panel && (status === 'idle' || status === 'restarting' || status === 'dead')) {
          if (status !== 'idle') {
            sidebar.attach(null, 'The kernel is restarting.');
          } else if (!sidebar.current) {
            follow();
          }
        }
      });
      ctx.ready.then(() => tracker.currentWidget === panel && follow());
    };
    // The notebooks are followed once the setting is known: an Agent
    // notebook must not open the sidebar that the setting keeps closed.
    settingsRead.then(() => {
      tracker.widgetAdded.connect((_, panel) => watch(panel));
      tracker.forEach(watch);
      tracker.currentChanged.connect(follow);
      sidebar.onShown = follow;
      follow();
    });
    return {
      isAgent: isAgentKernel,
      prompt: (panel, text) => {
        const kernel = panel.sessionContext.session?.kernel;
        if (!kernel || !isAgentKernel(panel)) {
          return false;
        }
        app.shell.activateById(sidebar.id);
        return sidebar.prompt(kernel, text);
      },
      openSettings: panel => {
        const kernel = panel.sessionContext.session?.kernel;
        if (!kernel || !isAgentKernel(panel)) {
          return;
        }
        app.shell.activateById(sidebar.id);
        sidebar.openSettings(kernel);
      }
    };
  }
};

export default [plugin, notebookPlugin, completer];
