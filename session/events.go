package session

import "github.com/agentkernel/agentkernel/agent"

// Host events besides the agent's own (agent.Event kinds), which a host
// passes on from whichever session is current.
const (
	// EventSessionChanged: another session became current (new, resume).
	EventSessionChanged agent.EventKind = "sessionChanged"
	// EventSettingsChanged: the model or the permission mode changed.
	EventSettingsChanged agent.EventKind = "settingsChanged"
	// EventCheckpoint: a step that may change the workspace has run and
	// what it did is recorded (Event.Checkpoint).
	EventCheckpoint agent.EventKind = "checkpoint"
	// EventMCPChanged: an MCP server's state changed (see MCPStatus).
	EventMCPChanged agent.EventKind = "mcpChanged"
)

// Subscribe registers f for the events of the current session, whichever
// it is, and the host's own (EventSessionChanged, EventSettingsChanged).
// f is called synchronously on the goroutine that caused the event, with
// no lock of the host or the task held: it must be quick, and may call
// back into the host's getters. The returned func removes it.
func (h *Host) Subscribe(f func(agent.Event)) (remove func()) { return h.lis.Add(f) }
