package backing

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
)

// ErrInterrupted is returned by Runner.Do and Runner.Execute for a request
// that an Interrupt ended while it waited for a kernel to start: it never
// reached a kernel. Test with errors.Is.
var ErrInterrupted = errors.New("backing: interrupted while the kernel was starting")

// Runner is the kernel that runs code for a session: the user's cells in
// code mode, %%code cells, and the agent's execute_code. It starts on first
// use (or at Start), and a kernel that dies is replaced on the next use.
// Every method is safe for concurrent use; requests reach the kernel in the
// order they were made. Local runs a kernelspec on this machine; a kernel
// on a Jupyter server is the other kind.
type Runner interface {
	// Start begins starting a kernel in the background unless one runs or
	// is starting.
	Start()
	// Running reports whether a kernel is up: a request now need not wait
	// for a start.
	Running() bool
	// Ready starts a kernel if none runs and waits until one is up.
	Ready(ctx context.Context) error
	// Do sends one request (shell or control) to the kernel, starting one
	// first if needed, and streams back what the kernel sends for it.
	// Requests that wait for a start when Interrupt is called fail with
	// ErrInterrupted.
	Do(ctx context.Context, req client.Request, h client.Handlers) (*wire.Message, error)
	// Execute runs code and collects its outputs; each output also goes to
	// e.Output as it comes. When ctx ends the kernel is interrupted and
	// Execute returns once the kernel has replied, or a grace period has
	// passed, with ctx's error.
	Execute(ctx context.Context, e Exec) (Result, error)
	// Interrupt interrupts what the kernel runs, and ends the requests that
	// wait for it to start.
	Interrupt(ctx context.Context) error
	// Restart restarts the kernel: its state is lost.
	Restart(ctx context.Context) error
	// LanguageInfo returns the kernel's language_info: from the running
	// kernel, else cached from an earlier one, else it waits for a start
	// within ctx. Nil when none is known.
	LanguageInfo(ctx context.Context) json.RawMessage
	// Debugger reports whether the kernel said it has a debugger (the
	// kernel_info_reply's "debugger"), as far as LanguageInfo knows.
	Debugger() bool
	// Describe names the kernel for people: "Python 3 (ipykernel)".
	Describe() string
	// Close shuts the kernel down (also one still starting). A second
	// call returns net.ErrClosed.
	Close() error
}

// Generations is a Runner that counts the kernels it has run: the count
// grows when a kernel starts, when one that died is replaced and when one
// restarts, so a caller that saw a smaller count knows that the variables
// it knew of are gone. 0: no kernel has run yet. Local and Remote are
// Generations.
type Generations interface {
	Generation() int
}

// Exec is code to run with Runner.Execute.
type Exec struct {
	Code string
	// Output receives every output of the code (each iopub message, status
	// included) as it arrives, with its content unchanged. It runs on the
	// kernel client's goroutine: it must be quick.
	Output func(Output)
	// Input answers input(); nil runs the code with stdin disabled.
	Input func(prompt string, password bool) (string, error)
}
