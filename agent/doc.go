// Package agent is agentkernel's coding agent, with no Jupyter inside: the
// task loop that drives a model through a turn, the tools the model may
// call, and the permission rules that decide whether a call runs.
//
// Where to start:
//   - [New] makes a [Task] over a provider, a [Toolbox], a [Policy] and a
//     [Store]; its turns stream the model's words into UI messages (every
//     completed one stored before the next step), run the tools the policy
//     allows, ask an [Approver] when it says Ask, and end with a completion,
//     an idle ask or an error. Its events go to its listeners.
//   - [NewWorkspace] confines file paths to the notebook's directory
//     ([Workspace.Resolve] refuses "..", outside absolute paths and symlink
//     escapes).
//   - [NewToolbox] builds the tools (execute_code, read_file, list_files,
//     search_files, write_file, edit_file, ask_followup_question,
//     attempt_completion, propose_cell, web_fetch when allowed) over a
//     Workspace and a [CodeRunner] that the session host implements;
//     [Toolbox.Tools] is what the model is offered, [Toolbox.Lookup] finds a
//     tool and [Tool.Execute] runs it. A [ToolSource] (package mcp: the MCP
//     servers) adds tools named mcp__SERVER__TOOL, decided by the same
//     policy. [BasePrompt] tells the model what the offered tools let it do.
//   - [NewPolicy] decides each call: [Policy.Decide] gives Allow, Deny or Ask
//     from the mode (default, acceptEdits, bypassPermissions, plan), the
//     session's allow-all set and the configured allow and deny rules (see
//     [ParseRule] for their syntax). Hard refusals — protected paths
//     (internal/protect) and dangerous commands ([DangerousCode]) — hold in
//     every mode. [Policy.Answer] applies the user's answer to an Ask, and
//     [DecisionMessage] turns every decision into a UI message so that it
//     is recorded in the history.
//
// Ownership: of agentkernel's packages it imports messages, rewind,
// agent/provider, hooks and internal/protect: never a kernel, the store or
// the session host (agent/agentstore adapts the store to [Store]). The
// tools never decide permissions and the policy never runs a tool: the task
// loop calls Decide, asks the user when told to, and only then Execute.
package agent
