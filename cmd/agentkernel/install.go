package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/agentkernel/agentkernel/bridge"
	"github.com/agentkernel/agentkernel/headless"
	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/kernel/client"
)

func runInstall(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("install", "install [--user | --sys-prefix | --prefix DIR] [flags]", stderr)
	user := fs.Bool("user", false, "install for the current user (default)")
	sysPrefix := fs.Bool("sys-prefix", false, "install into the share/jupyter of the Python that runs Jupyter")
	prefix := fs.String("prefix", "", "install into `DIR`/share/jupyter/kernels")
	name := fs.String("name", "agent", "kernelspec name")
	display := fs.String("display-name", "", "name shown in Jupyter (default \"Agent\" or \"Agent (code)\")")
	backing := fs.String("backing", "python3", "kernelspec of the backing kernel that runs code")
	modeName := fs.String("mode", "code", "what a cell is: code (backing-kernel code) or prompt (a request to the agent)")
	probe := fs.Bool("probe", true, "start the backing kernel once to cache its language_info (instant kernel_info later)")
	model := fs.String("model", "", "model for this kernelspec (sets AGENTKERNEL_MODEL in kernel.json), e.g. anthropic:claude-sonnet-4-5")
	approve := fs.String("approve", "", "headless approval policy for this kernelspec: none, read-only or all (sets AGENTKERNEL_APPROVE)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("install: unexpected argument %q", fs.Arg(0))
	}
	scope, n := kernel.ScopeUser, 0
	if *user {
		n++
	}
	if *sysPrefix {
		scope, n = kernel.ScopeSysPrefix, n+1
	}
	if *prefix != "" {
		scope, n = kernel.ScopePrefix, n+1
	}
	if n > 1 {
		return errors.New("install: choose one of --user, --sys-prefix and --prefix")
	}
	mode, err := bridge.ParseMode(*modeName)
	if err != nil {
		return err
	}
	spec, err := client.FindSpec(*backing)
	if err != nil {
		return fmt.Errorf("install: backing kernel: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("install: locate agentkernel binary: %w", err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return fmt.Errorf("install: locate agentkernel binary: %w", err)
	}
	if *display == "" {
		*display = "Agent"
		if mode == bridge.ModeCode {
			*display = "Agent (code)"
		}
	}
	if _, err := headless.ParseApprove(*approve); err != nil {
		return err
	}
	env := map[string]string{}
	if *model != "" {
		env["AGENTKERNEL_MODEL"] = *model
	}
	if *approve != "" {
		env["AGENTKERNEL_APPROVE"] = *approve
	}
	language := spec.Language
	if mode == bridge.ModePrompt {
		language = "markdown"
	}
	dir, err := kernel.SpecsDir(scope, *prefix)
	if err != nil {
		return err
	}
	ks := kernel.KernelSpec{
		Argv:          []string{exe, "kernel", "-f", "{connection_file}", "--backing", *backing, "--mode", string(mode)},
		DisplayName:   *display,
		Language:      language,
		InterruptMode: "message",
		Env:           env,
		Metadata: map[string]any{
			"agentkernel": map[string]any{"backing": *backing, "mode": string(mode), "version": versionString()},
		},
	}
	target, err := kernel.InstallSpec(dir, *name, ks, logos())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Installed kernelspec %s in %s\n", *name, target)
	if *probe {
		if err := probeBacking(*backing); err != nil {
			fmt.Fprintf(stderr, "warning: could not start backing kernel %q to cache its language_info: %v\n", *backing, err)
		}
	}
	return nil
}

// probeBacking starts the backing kernel once so that its language_info is
// cached for instant kernel_info replies.
func probeBacking(backing string) error {
	log, err := newLogger(io.Discard)
	if err != nil {
		return err
	}
	b, err := bridge.New(bridge.Config{Backing: backing, Logger: log, StartTimeout: 60 * time.Second})
	if err != nil {
		return err
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return b.Probe(ctx)
}
