// The buttons under an error output: "Fix with the agent" (the cell
// actions' fix command), or "Open Settings" for an error of the kernel's
// configuration. They show only in a notebook on an agent kernel.
import { JupyterFrontEnd } from '@jupyterlab/application';
import { Cell } from '@jupyterlab/cells';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry, RenderedError } from '@jupyterlab/rendermime';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { IAgentSidebar } from './agentSidebar';
import { NotebookCommandIDs } from './cellActions';

/** The mime type JupyterLab gives an error output (beside its text, as stderr). */
const ERROR_MIME = 'application/vnd.jupyter.error';

/**
 * The errors of the kernel's configuration (surface/bridge/prompt.go's ename for
 * no model): the settings mend them, not the agent, so their output
 * offers the settings and no "Fix with the agent".
 */
const SETTINGS_ERRORS = new Set(['NoModelConfigured']);

/** The class a notebook on an agent kernel wears: the Fix buttons show in it. */
export const AGENT_NOTEBOOK_CLASS = 'ak-agent-notebook';

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

/**
 * Adds to rendermime the error renderer with the buttons: a Fix runs the
 * fix command on the output's cell (made the active cell first), Open
 * Settings shows the sidebar's settings.
 */
export function addErrorButtons(
  app: JupyterFrontEnd,
  tracker: INotebookTracker,
  rendermime: IRenderMimeRegistry,
  sidebar: IAgentSidebar
): void {
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
