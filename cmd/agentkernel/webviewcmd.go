package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/surface/webview"
)

// runWebview: `agentkernel webview list` shows the web panels of running
// kernels (from their runtime files in Jupyter's runtime directory).
func runWebview(args []string, stdout, stderr io.Writer) error {
	if ok, err := wantList("webview", "webview list [--json]", args, stderr); !ok {
		return err
	}
	fs := newFlagSet("webview list", "webview list [--json]", stderr)
	asJSON := fs.Bool("json", false, "print JSON for scripts")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	dir := client.RuntimeDir()
	list, err := webview.ListRunning(dir)
	if err != nil {
		return err
	}
	if *asJSON {
		type row struct {
			webview.Running
			Alive bool   `json:"alive"`
			File  string `json:"file"`
		}
		rows := make([]row, 0, len(list))
		for _, r := range list {
			rows = append(rows, row{r, r.Alive, r.File})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	if len(list) == 0 {
		fmt.Fprintf(stdout, "No web panels running (runtime dir %s). Start one with %%agent webview in a notebook.\n", dir)
		return nil
	}
	w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "PID\tSTARTED\tALIVE\tURL")
	for _, r := range list {
		fmt.Fprintf(w, "%d\t%s\t%v\t%s\n", r.PID, r.Started.Local().Format("2006-01-02 15:04"), r.Alive, r.URL)
	}
	return w.Flush()
}

// wantList checks that a command's only subcommand, list, was given: if
// not it prints the usage and says why (nothing, for a request for help).
func wantList(cmd, synopsis string, args []string, stderr io.Writer) (bool, error) {
	if len(args) > 0 && args[0] == "list" {
		return true, nil
	}
	fmt.Fprintln(stderr, "Usage: agentkernel "+synopsis)
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		return false, nil
	}
	return false, errors.New(cmd + ": want the subcommand list")
}
