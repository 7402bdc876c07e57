package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentkernel/agentkernel/backing"
)

// variables is the agent's agent.Variables over the host's backing
// kernel: read quietly (backing.Namespace, backing.Inspect), through a
// kernel subshell while a cell runs when the kernel has them.
type variables struct{ h *Host }

// variablesWait bounds a read of the namespace: a kernel without
// subshells answers only once the running cell is done.
const variablesWait = 5 * time.Second

// errKernelBusy is the read's error when the kernel did not answer in
// time.
func (v variables) errKernelBusy(q *backing.Quiet) error {
	if q.Beside() {
		return fmt.Errorf("the kernel did not answer within %s", variablesWait)
	}
	return fmt.Errorf("the kernel is busy (it did not answer within %s): it runs a cell, and has no subshells "+
		"to answer beside it (ipykernel 7 has them); ask again when the cell is done, or interrupt it", variablesWait)
}

// quiet is the runner to read through, or an error when no kernel runs.
func (v variables) quiet() (*backing.Quiet, error) {
	q := v.h.quietRunner()
	if q == nil {
		return nil, errors.New("no kernel to read")
	}
	if !q.Running() {
		return nil, errors.New("the kernel is not running yet: it has no variables (run a cell first)")
	}
	return q, nil
}

// List implements agent.Variables.
func (v variables) List(ctx context.Context) (string, error) {
	q, err := v.quiet()
	if err != nil {
		return "", err
	}
	rctx, cancel := context.WithTimeout(ctx, variablesWait)
	defer cancel()
	vars, err := backing.Namespace(rctx, q)
	if err != nil {
		if rctx.Err() != nil && ctx.Err() == nil {
			return "", v.errKernelBusy(q)
		}
		return "", err
	}
	var lines, modules []string
	for _, x := range vars {
		if x.Type == "module" {
			modules = append(modules, x.Name+" ("+x.Repr+")")
			continue
		}
		lines = append(lines, truncate(x.Describe(), maxVariableLine))
	}
	if len(lines) == 0 {
		lines = append(lines, "No variables.")
	}
	if len(modules) > 0 {
		lines = append(lines, "Modules: "+strings.Join(modules, ", "))
	}
	return strings.Join(lines, "\n"), nil
}

// Inspect implements agent.Variables.
func (v variables) Inspect(ctx context.Context, name string) (string, error) {
	q, err := v.quiet()
	if err != nil {
		return "", err
	}
	rctx, cancel := context.WithTimeout(ctx, variablesWait)
	defer cancel()
	s, err := backing.Inspect(rctx, q, name)
	if err != nil && rctx.Err() != nil && ctx.Err() == nil {
		return "", v.errKernelBusy(q)
	}
	return s, err
}
