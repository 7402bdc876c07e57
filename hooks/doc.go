// Package hooks runs the user's hooks — shell commands in Claude Code's
// shape — around an agent session's prompts, tool calls and stops, so that
// a team can enforce its policy on the agent whatever surface drives it.
//
// Hooks come from two places, and both run: the "hooks" object of the
// agentkernel config file (the user's), and .agentkernel/settings.json in
// the workspace (the project's, read again whenever it changes). A
// [Config] maps each [Event] to matchers, each with its commands.
//
// Start with [New] and [Runner.Run]: Run gives each matching hook the event
// as JSON on stdin ([Input]) and reads what it says back: exit status 0
// lets the action go on, 2 blocks it with stderr as the reason, and a JSON
// reply {"decision": "block"|"approve", "reason": …} on stdout is honoured.
// A hook that times out (60 s unless it says otherwise), crashes or exits
// with another status is a [Problem]: logged, never fatal. What a block
// means for each event is the agent's (package agent) to apply.
package hooks
