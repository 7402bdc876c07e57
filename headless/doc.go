// Package headless runs the agent without a Jupyter frontend: what
// `agentkernel ask` (and any other one-shot automation) needs, on the same
// code paths as the kernel — an agent.Task over the real store and toolbox,
// with execute_code running in a real backing kernel.
//
// Where to start:
//   - [NewRunner] returns a [Runner], the agent.CodeRunner that runs the
//     agent's code in a backing kernel (python3 by default) started with
//     package kernel/client on first use and shut down by Close.
//   - [Open] opens a [Session]: a new session in the store, or a stored one
//     to continue ([FindSession] resolves an id or a unique id prefix,
//     [Latest] the most recent session). [Session.Ask] submits one prompt,
//     answers the agent's asks with an [Approver] ([PolicyApprover] for the
//     headless policies none, read-only and all) and returns a [Result]
//     with the final answer, the number of model requests, tokens, cost
//     and duration.
//
// Files: runner.go (the backing kernel), session.go (the agent session and
// Ask), approve.go (policies and approvers).
//
// Ownership: the package keeps no global state and holds no kernel server
// code. A Runner owns its backing kernel and the one goroutine per running
// cell that interrupts it when the caller's context ends; Close releases
// both. A Session owns its Task (and through it the turn goroutine) and,
// when Open created it, its Runner; it does not own the store or the
// provider, which the caller opens and closes.
package headless
