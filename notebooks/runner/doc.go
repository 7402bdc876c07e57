// Package runner runs Jupyter notebooks headlessly through any kernel, as
// nbclient does: [Run] executes a notebook's code cells through a kernel
// started with package kernel/client and returns the executed copy, with
// nbclient's rules for outputs, execution counts, timeouts and errors
// ([CellError]). On an agentkernel kernel it is a frontend of the notebook
// comm too: it answers the agent's notebook tools on the notebook it runs.
//
// Files: run.go (the runner), outputs.go (iopub messages to nbformat
// outputs), comm.go (the notebook comm's frontend side).
//
// Ownership: the package keeps no global state. Run owns the kernel it
// starts and the one goroutine per executing cell that waits for the
// kernel's reply; both are gone when Run returns.
package runner
