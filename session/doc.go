// Package session is the session host: the one owner of an agent
// session's lifecycle for every surface that drives one — the notebook
// (package bridge maps Jupyter messages onto it), the web panel (which
// calls the same typed methods), and the headless commands (ask, run).
//
// A Host holds the current session of one surface: New makes one, and
// NewSession, Resume and Continue switch it. Submit sends a prompt and
// follows the turn to its end, answering asks through the Follow's
// Approver (the notebook's stdin, a policy, a terminal); the agent's code
// runs in the Config.Runner with its outputs going to the Follow's
// Output. Subscribe follows whichever session is current.
//
// The host composes parts, each with its own state and lock, that the
// surfaces reach through it: Conversation (the current session's record),
// Models (the model, resolved in one order everywhere — Models.Set, then
// the resumed session's, then Config.Model — each model string opened
// once per host), Modes (permission and agent modes, rules), World (the
// checkpoints and rewinds of files, cells and kernel), CodeLog (what the
// backing kernel ran) and Tools (MCP servers, a client's files, the
// frontends' notebooks). The host's own lock guards only the current
// session and the store; a part's lock is taken after it, never before.
package session
