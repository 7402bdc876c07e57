// Package agent is agentkernel's coding agent, with no Jupyter inside: the
// tools the model may call, the permission rules that decide whether a call
// runs, and (added by the task loop) the loop that drives a model through
// a task.
//
// Where to start:
//   - [NewWorkspace] confines file paths to the notebook's directory
//     ([Workspace.Resolve] refuses "..", outside absolute paths and symlink
//     escapes).
//   - [NewToolbox] builds the tools (execute_code, read_file, list_files,
//     search_files, write_file, edit_file, ask_followup_question,
//     attempt_completion, propose_cell) over a Workspace and a [CodeRunner]
//     that the bridge implements; [Toolbox.Tools] is what the model is
//     offered, [Toolbox.Lookup] finds a tool and [Tool.Execute] runs it.
//     A [ToolSource] (package mcp: the MCP servers) adds tools named
//     mcp__SERVER__TOOL, decided by the same policy.
//   - [NewPolicy] decides each call: [Policy.Decide] gives Allow, Deny or Ask
//     from the mode (default, acceptEdits, bypassPermissions, plan), the
//     session's allow-all set and the configured allow and deny rules (see
//     [ParseRule] for their syntax). Hard refusals — protected paths
//     (protect.Path) and dangerous commands ([DangerousCode]) — hold in
//     every mode. [Policy.Answer] applies the user's answer to an Ask, and
//     [DecisionMessage] turns every decision into a UI message so that it
//     is recorded in the history.
//
// Ownership: the package imports only messages, agent/provider and the
// standard library. The tools never decide permissions and the policy never
// runs a tool: the task loop calls Decide, asks the user when told to, and
// only then Execute.
package agent
