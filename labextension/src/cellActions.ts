// The cells' actions that talk to the agent: "Ask the agent" (the cell
// toolbar, schema/notebook.json) and "Fix with the agent" (run from the
// button under an error output, errorButtons.ts), each a command that
// sends a prompt naming the cell into the sidebar's conversation.
import { JupyterFrontEnd } from '@jupyterlab/application';
import { InputDialog } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { LabIcon } from '@jupyterlab/ui-components';

import { IAgentSidebar } from './agentSidebar';

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

/** The notebook that holds cell id: the current one first. */
function notebookOf(tracker: INotebookTracker, id: string): NotebookPanel | null {
  const has = (p: NotebookPanel | null) => !!p?.content.model?.sharedModel.cells.some(c => c.id === id);
  const current = tracker.currentWidget;
  return has(current) ? current : (tracker.find(has) ?? null);
}

/** Adds the cells' commands (NotebookCommandIDs) to app. */
export function addCellCommands(app: JupyterFrontEnd, tracker: INotebookTracker, sidebar: IAgentSidebar): void {
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
}
