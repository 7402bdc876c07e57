package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider/acpagent"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/surface/bridge"
)

func runInstall(args []string, stdout, stderr io.Writer) error {
	in, err := parseInstall(args, stderr)
	if err != nil {
		return err
	}
	spec, found, err := backingSpec(in.gwURL, in.backing, stderr)
	if err != nil {
		return err
	}
	in.probe = in.probe && found && in.gwURL == "" // a probe of a gateway would start (and stop) a kernel there
	if in.exe, err = executable(); err != nil {
		return fmt.Errorf("install: locate agentkernel binary: %w", err)
	}
	if in.exe, err = filepath.EvalSymlinks(in.exe); err != nil {
		return fmt.Errorf("install: locate agentkernel binary: %w", err)
	}
	if in.dir, err = kernel.SpecsDir(in.scope, in.prefix); err != nil {
		return err
	}
	for _, k := range in.kernels {
		if err := checkReplace(in.dir, k.name); err != nil {
			return err
		}
	}
	// The probe comes first: whether the backing kernel has a debugger goes
	// into the metadata, where JupyterLab looks before the kernel starts.
	debugger := false
	if in.probe {
		if debugger, err = probeBacking(in.backing); err != nil {
			fmt.Fprintf(stderr, "warning: could not start backing kernel %q to cache its language_info: %v\n", in.backing, err)
		}
	} else if in.gwURL == "" {
		debugger = backing.CachedDebugger(in.backing)
	}
	for _, k := range in.kernels {
		ks := agentSpec(in.exe, in.backing, k.mode, k.display, spec.Language, in.env, debugger)
		if found && spec.Dir != "" && !client.InSystemDirs(spec.Dir) {
			// A kernel a gateway starts has no $HOME or $JUPYTER_PATH to
			// find it by name.
			ks.Argv = append(ks.Argv, "--backing-dir", spec.Dir)
		}
		target, err := kernel.InstallSpec(in.dir, k.name, ks, logos())
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Installed kernelspec %s (%q) in %s\n", k.name, k.display, target)
		reportShadows(stdout, stderr, k.name, target, in.scope == kernel.ScopeSysPrefix)
		fmt.Fprintf(stdout, "Undo with: agentkernel uninstall --name %s%s\n", k.name, scopeFlag(in.scope, in.prefix))
	}
	return nil
}

// installRun is one `agentkernel install`: where, which kernelspecs, over
// which backing kernel.
type installRun struct {
	scope           kernel.Scope
	prefix, backing string
	gwURL, exe, dir string
	probe           bool
	env             map[string]string
	kernels         []installKernel
}

// installKernel is one kernelspec to write.
type installKernel struct {
	name, display string
	mode          bridge.CellKind
}

// parseInstall reads install's flags. Without --name, --mode and
// --display-name it installs the pair the launcher shows: "Agent"
// (agent, prompt mode) and "Agent (code)" (agent-code, code mode).
func parseInstall(args []string, stderr io.Writer) (*installRun, error) {
	fs := newFlagSet("install", "install [--user | --sys-prefix | --prefix DIR] [flags]", stderr)
	user := fs.Bool("user", false, "install for the current user (default)")
	sysPrefix := fs.Bool("sys-prefix", false, "install into the share/jupyter of the Python environment agentkernel was pip-installed into, else of the Python that runs Jupyter")
	prefix := fs.String("prefix", "", "install into `DIR`/share/jupyter/kernels")
	name := fs.String("name", "", "kernelspec name (default: both \"agent\", prompt mode, and \"agent-code\", code mode)")
	display := fs.String("display-name", "", "name shown in Jupyter (default \"Agent\" or \"Agent (code)\")")
	backingName := fs.String("backing", "python3", "kernelspec of the backing kernel that runs code (never agentkernel's own)")
	modeName := fs.String("mode", "", "what a cell is: code (backing-kernel code) or prompt (a request to the agent); default code with --name")
	probe := fs.Bool("probe", true, "start the backing kernel once to cache its language_info (instant kernel_info later)")
	model := fs.String("model", "", "model for this kernelspec (sets AGENTKERNEL_MODEL in kernel.json), e.g. anthropic:claude-sonnet-4-5")
	agentName := fs.String("agent", "", "an external ACP agent answers instead of a model: claude, codex, gemini or its command line, "+
		"with or without acp: (sets AGENTKERNEL_MODEL to acp:AGENT; the agent must be installed)")
	gwURL := fs.String("gateway-url", "", "run the backing kernel on the Jupyter server at `URL` (writes JUPYTER_GATEWAY_URL into "+
		"the kernelspec; the token comes from JUPYTER_GATEWAY_AUTH_TOKEN where Jupyter runs); --backing then names a kernelspec there")
	approve := fs.String("approve", "", "headless approval policy for this kernelspec: none, read-only or all (sets AGENTKERNEL_APPROVE)")
	dataDir := fs.String("data-dir", "", "where this kernelspec's kernels keep their sessions (sets AGENTKERNEL_DATA_DIR; "+
		"default ~/.local/share/agentkernel of $HOME or of the account)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("install: unexpected argument %q", fs.Arg(0))
	}
	in := &installRun{prefix: *prefix, backing: *backingName, gwURL: *gwURL, probe: *probe, env: map[string]string{}}
	var err error
	if in.scope, err = parseScope(*user, *sysPrefix, *prefix); err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	if _, err := agent.ParseApprovalPolicy(*approve); err != nil {
		return nil, err
	}
	if *agentName != "" {
		if *model != "" {
			return nil, errors.New("install: --model and --agent: give one")
		}
		if _, err := acpagent.Find(*agentName); err != nil {
			return nil, fmt.Errorf("install: --agent: %w", err)
		}
		*model = acpagent.Model(*agentName)
	}
	if *dataDir != "" {
		abs, err := filepath.Abs(*dataDir)
		if err != nil {
			return nil, fmt.Errorf("install: --data-dir: %w", err)
		}
		*dataDir = abs
	}
	for k, v := range map[string]string{"AGENTKERNEL_MODEL": *model, "AGENTKERNEL_APPROVE": *approve, "JUPYTER_GATEWAY_URL": *gwURL,
		"AGENTKERNEL_DATA_DIR": *dataDir} {
		if v != "" {
			in.env[k] = v
		}
	}
	if *name == "" && *modeName == "" && *display == "" {
		in.kernels = []installKernel{{"agent", "Agent", bridge.PromptCells}, {"agent-code", "Agent (code)", bridge.CodeCells}}
		return in, nil
	}
	mode, err := bridge.ParseCellKind(*modeName)
	if err != nil {
		return nil, err
	}
	k := installKernel{name: cmp.Or(*name, "agent"), display: *display, mode: mode}
	if k.display == "" {
		k.display = "Agent"
		if mode == bridge.CodeCells {
			k.display = "Agent (code)"
		}
	}
	in.kernels = []installKernel{k}
	return in, nil
}

// agentSpec is the kernelspec of an agentkernel over the backing kernel
// backingName: the backing kernel's language (prose in prompt mode), and
// its debugger in code mode, where JupyterLab looks before the kernel
// starts.
func agentSpec(exe, backingName string, mode bridge.CellKind, display, language string, env map[string]string, debugger bool) kernel.KernelSpec {
	if env = maps.Clone(env); len(env) == 0 {
		env = nil
	}
	if mode == bridge.PromptCells {
		language = "markdown"
	}
	ks := kernel.KernelSpec{
		Argv:          []string{exe, "kernel", "-f", "{connection_file}", "--backing", backingName, "--mode", string(mode)},
		DisplayName:   display,
		Language:      language,
		InterruptMode: "message",
		Env:           env,
		Metadata: map[string]any{
			"agentkernel": map[string]any{"backing": backingName, "mode": string(mode), "version": versionString()},
		},
		KernelProtocolVersion: wire.ProtocolVersion,
	}
	if debugger && mode == bridge.CodeCells {
		ks.Metadata["debugger"] = true
	}
	return ks
}

// backingSpec is the backing kernel's kernelspec: on the gateway, or here.
// One not installed here yet (a container image built before its Python,
// a machine that runs its kernels on a gateway) is a warning, not an
// error: the kernel looks again at each cell and says what is missing;
// found is false then.
func backingSpec(gwURL, name string, stderr io.Writer) (spec *client.Spec, found bool, err error) {
	if gwURL != "" {
		if spec, err = gatewaySpec(gwURL, name); err != nil {
			return nil, false, fmt.Errorf("install: backing kernel: %w", err)
		}
		return spec, true, nil
	}
	spec, err = backing.Find(name)
	switch {
	case errors.Is(err, client.ErrNoSpec) && !errors.Is(err, backing.ErrSelf):
		fmt.Fprintf(stderr, "warning: no backing kernel %q here yet: code cells will fail until it is installed (%v)\n", name, err)
		return &client.Spec{Name: name, Language: guessLanguage(name)}, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("install: backing kernel: %w", err)
	}
	return spec, true, nil
}

// executable is os.Executable, or the absolute path we were started by
// where /proc is not mounted (a bare container or chroot).
func executable() (string, error) {
	exe, err := os.Executable()
	if err == nil {
		return exe, nil
	}
	if len(os.Args) > 0 && filepath.IsAbs(os.Args[0]) {
		if _, serr := os.Stat(os.Args[0]); serr == nil {
			return os.Args[0], nil
		}
	}
	return "", err
}

// guessLanguage names the language of a backing kernelspec that is not
// installed, from its name: python3 → python.
func guessLanguage(name string) string {
	name = strings.ToLower(name)
	if strings.HasPrefix(name, "python") {
		return "python"
	}
	return strings.TrimRight(name, "0123456789.-_")
}

// probeBacking starts the backing kernel once so that its language_info is
// cached for instant kernel_info replies, and reports whether it has a
// debugger.
func probeBacking(kernelspec string) (bool, error) {
	r, err := backing.Open(backing.Options{Kernel: kernelspec, StartTimeout: 60 * time.Second})
	if err != nil {
		return false, err
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err = r.Ready(ctx)
	return err == nil && r.Debugger(), err
}

// parseScope turns the --user, --sys-prefix and --prefix flags into a
// scope; --user is the default.
func parseScope(user, sysPrefix bool, prefix string) (kernel.Scope, error) {
	scope, n := kernel.ScopeUser, 0
	if user {
		n++
	}
	if sysPrefix {
		scope, n = kernel.ScopeSysPrefix, n+1
	}
	if prefix != "" {
		scope, n = kernel.ScopePrefix, n+1
	}
	if n > 1 {
		return 0, errors.New("choose one of --user, --sys-prefix and --prefix")
	}
	return scope, nil
}

// scopeFlag is the command-line flag that names scope again.
func scopeFlag(scope kernel.Scope, prefix string) string {
	switch scope {
	case kernel.ScopeSysPrefix:
		return " --sys-prefix"
	case kernel.ScopePrefix:
		return " --prefix " + prefix
	}
	return ""
}

// checkReplace refuses to overwrite a kernelspec that is not agentkernel's:
// installing as python3 into the directory that holds the real python3
// would destroy the kernel that agentkernel is meant to sit in front of.
func checkReplace(dir, name string) error {
	existing := filepath.Join(dir, strings.ToLower(name))
	spec, err := client.ReadSpec(existing)
	if err != nil || backing.IsAgentKernel(spec) {
		return nil // nothing there (or nothing readable): install writes it anew
	}
	return fmt.Errorf("install: %s holds the kernelspec %q (%s), which is not agentkernel's: installing would replace it; "+
		"choose another --name, or a scope that comes before it on Jupyter's search path (--user, or --prefix with JUPYTER_PATH)",
		existing, name, spec.DisplayName)
}

// reportShadows says which kernelspecs of the same name the one just
// installed in target hides from Jupyter, and warns when it is hidden
// itself or not on Jupyter's search path at all. A --sys-prefix install
// (sysPrefix) is on the search path of the Jupyter that Python runs, which
// need not be the one this process sees (a venv's).
func reportShadows(stdout, stderr io.Writer, name, target string, sysPrefix bool) {
	specs, _ := client.FindSpecs(name)
	at := -1
	for i, s := range specs {
		if sameDir(s.Dir, target) {
			at = i
			break
		}
	}
	if at < 0 && sysPrefix {
		fmt.Fprintln(stdout, "Jupyter run by the Python of that sys.prefix finds it there")
		return
	}
	if at < 0 {
		fmt.Fprintf(stderr, "warning: %s is not on Jupyter's search path; add its share/jupyter to JUPYTER_PATH\n",
			filepath.Dir(target))
		return
	}
	for _, s := range specs[:at] {
		fmt.Fprintf(stderr, "warning: %s (%s) comes first on Jupyter's search path: Jupyter will not use this install under the name %s\n",
			s.Dir, s.DisplayName, name)
	}
	for _, s := range specs[at+1:] {
		fmt.Fprintf(stdout, "It shadows %s (%s): Jupyter now starts agentkernel for %q\n", s.Dir, s.DisplayName, name)
	}
}

func sameDir(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	if err1 != nil || err2 != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return ra == rb
}

func runUninstall(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("uninstall", "uninstall [--user | --sys-prefix | --prefix DIR] --name NAME", stderr)
	user := fs.Bool("user", false, "remove from the current user's kernelspecs (default)")
	sysPrefix := fs.Bool("sys-prefix", false, "remove from the share/jupyter of the Python that runs Jupyter")
	prefix := fs.String("prefix", "", "remove from `DIR`/share/jupyter/kernels")
	name := fs.String("name", "", "kernelspec name (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("uninstall: unexpected argument %q", fs.Arg(0))
	}
	if *name == "" {
		fs.Usage()
		return errors.New("uninstall: --name is required")
	}
	scope, err := parseScope(*user, *sysPrefix, *prefix)
	if err != nil {
		return fmt.Errorf("uninstall: %w", err)
	}
	dir, err := kernel.SpecsDir(scope, *prefix)
	if err != nil {
		return err
	}
	target := filepath.Join(dir, strings.ToLower(*name))
	spec, err := client.ReadSpec(target)
	if err != nil {
		return fmt.Errorf("uninstall: no kernelspec %q in %s: %w", *name, dir, err)
	}
	if !backing.IsAgentKernel(spec) {
		return fmt.Errorf("uninstall: %s (%s) is not an agentkernel kernelspec; remove it with jupyter kernelspec remove", target, spec.DisplayName)
	}
	if err := os.RemoveAll(target); err != nil {
		return fmt.Errorf("uninstall: %w", err)
	}
	fmt.Fprintf(stdout, "Removed kernelspec %s from %s\n", *name, target)
	if s, err := client.FindSpec(*name); err == nil {
		fmt.Fprintf(stdout, "Jupyter now starts %s (%s) for %q\n", s.Dir, s.DisplayName, *name)
	}
	return nil
}

// gatewaySpec checks that the server at url has the kernelspec (and that
// it is not agentkernel) and returns it. The token comes from
// JUPYTER_GATEWAY_AUTH_TOKEN.
func gatewaySpec(url, name string) (*client.Spec, error) {
	env := map[string]string{"JUPYTER_GATEWAY_URL": url}
	for _, k := range []string{"JUPYTER_GATEWAY_AUTH_TOKEN", "JUPYTER_GATEWAY_HEADERS", "JUPYTER_GATEWAY_VALIDATE_CERT"} {
		env[k] = os.Getenv(k)
	}
	gw, _, err := backing.GatewayFromEnv(func(k string) string { return env[k] })
	if err != nil {
		return nil, err
	}
	r, err := backing.NewRemote(backing.RemoteOptions{Gateway: gw, Kernel: name})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return r.Spec(ctx)
}
