// The Agent sidebar's service to the notebooks: whether a notebook is an
// agent's, and a prompt into its conversation. The sidebar plugin
// (index.ts) provides it; the notebook plugin's cell actions and error
// buttons (cellActions.ts, errorButtons.ts) use it.
import { NotebookPanel } from '@jupyterlab/notebook';
import { Token } from '@lumino/coreutils';

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
