package mcp

import (
	"fmt"
	"io"
	"strings"
)

// FormatStatus writes the servers' status for people: one block per
// server with its state, transport, where it runs, its error and its
// tools. It is what %agent mcp and agentkernel mcp list print.
func FormatStatus(w io.Writer, servers []ServerStatus) {
	if len(servers) == 0 {
		fmt.Fprintf(w, "No MCP servers are configured. Add them to %s in the notebook's directory or to \"mcpServers\" in the config file.\n", ProjectFile)
		return
	}
	for i, s := range servers {
		if i > 0 {
			fmt.Fprintln(w)
		}
		head := fmt.Sprintf("%s: %s", s.Name, s.State)
		if s.Transport != "" {
			head += fmt.Sprintf(" (%s, %s)", s.Transport, s.Scope)
		}
		fmt.Fprintln(w, head)
		if s.Where != "" {
			fmt.Fprintf(w, "  %s\n", s.Where)
		}
		if s.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", strings.ReplaceAll(s.Error, "\n", "\n  "))
		}
		for _, warn := range s.Warnings {
			fmt.Fprintf(w, "  warning: %s\n", warn)
		}
		if len(s.Tools) > 0 {
			fmt.Fprintf(w, "  %d tool%s:\n", len(s.Tools), plural(len(s.Tools)))
		}
		for _, t := range s.Tools {
			line := "    " + t.Tool
			if t.AlwaysAllow {
				line += " (always allowed)"
			}
			if t.Description != "" {
				line += " — " + truncate(t.Description, 100)
			}
			fmt.Fprintln(w, line)
		}
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
