package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/backing"
)

// @-mentions in a prompt: @name for a variable of the live kernel (its
// description, as inspect_variable gives it), @cell:N or @cell:ID for a
// cell of the notebook (the one whose execution count is N, or whose id is
// ID: its source and outputs), and @path for a file of the workspace (its
// head, as read_file gives it, or an image; protected files are not
// read). The user's words keep the mention as typed; what it names goes
// to the model in the context block. What names nothing is left as text.

const (
	// maxMentions is how many mentions of one prompt are resolved.
	maxMentions = 5
	// maxMentionChars caps what one mention gives the model.
	maxMentionChars = 4000
	// mentionLines is how much of a mentioned file is given.
	mentionLines = 60
)

// mentionRE finds @mentions: after the start, a space or an opening
// bracket or quote (so that an address a@b.org is none).
var mentionRE = regexp.MustCompile(`(?:^|[\s(\[{"'])@([A-Za-z0-9_~][A-Za-z0-9_./~:-]*)`)

// Mentions returns the mentions of text, as typed after the @, in order,
// each once, at most maxMentions; trailing punctuation is not part of one.
func Mentions(text string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range mentionRE.FindAllStringSubmatch(text, -1) {
		name := strings.TrimRight(m[1], ".,:;!?")
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, name)
		if len(out) == maxMentions {
			break
		}
	}
	return out
}

// identifier is a variable name, or name.attribute.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// mentionsNote resolves the mentions of prompt for session c: what each
// names, for the context block ("" when none names anything).
func (h *Host) mentionsNote(ctx context.Context, c *current, prompt string) string {
	var parts []string
	for _, name := range Mentions(prompt) {
		if s := h.mention(ctx, c, name); s != "" {
			parts = append(parts, capText(s, maxMentionChars))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "The user's message mentions:\n\n" + strings.Join(parts, "\n\n")
}

// mention is what name (a mention, without its @) names, "" for nothing.
func (h *Host) mention(ctx context.Context, c *current, name string) string {
	if ref, ok := strings.CutPrefix(name, "cell:"); ok {
		return h.mentionedCell(ctx, ref)
	}
	if identifier.MatchString(name) && h.quiet != nil && h.quiet.Running() {
		vctx, cancel := context.WithTimeout(ctx, variablesWait)
		s, err := backing.Inspect(vctx, h.quiet, name)
		cancel()
		switch {
		case err == nil:
			return "@" + name + " (a variable of the kernel):\n" + s
		case !errors.Is(err, backing.ErrNoVariable):
			h.log.Debug("mention", "name", name, "error", err)
		}
	}
	return h.mentionedFile(ctx, c, name)
}

// mentionedCell is the notebook's cell ref: the one whose execution
// count is ref, else whose id is ref.
func (h *Host) mentionedCell(ctx context.Context, ref string) string {
	cells := h.tools.currentCells()
	if cells == nil {
		return ""
	}
	v, err := cells.Read(ctx, 2000)
	if err != nil {
		return "@cell:" + ref + ": the notebook could not be read: " + err.Error()
	}
	n, numbered := strconv.Atoi(ref)
	for i, cl := range v.Cells {
		if (numbered == nil && cl.ExecutionCount == n) || cl.ID == ref {
			var b strings.Builder
			fmt.Fprintf(&b, "@cell:%s (cell %s, index %d, %s", ref, cl.ID, i, cl.Kind)
			if cl.ExecutionCount > 0 {
				fmt.Fprintf(&b, ", [%d]", cl.ExecutionCount)
			}
			b.WriteString("):\n" + cl.Source)
			for _, o := range cl.Outputs {
				fmt.Fprintf(&b, "\n-- %s", o.Type)
				for _, im := range o.Images {
					fmt.Fprintf(&b, " [%s]", im)
				}
				if o.Text != "" {
					b.WriteString("\n" + strings.TrimRight(o.Text, "\n"))
				}
			}
			return b.String()
		}
	}
	return "@cell:" + ref + ": the notebook has no such cell (neither an execution count nor an id)."
}

// mentionedFile is the head of the workspace's file path, read as
// read_file reads it (confined to the workspace, protected files
// refused); "" when there is no such file.
func (h *Host) mentionedFile(ctx context.Context, c *current, path string) string {
	if c.tb == nil {
		return ""
	}
	abs, err := c.ws.Resolve(path)
	if err != nil || !isFile(abs) {
		return ""
	}
	tool, ok := c.tb.Lookup(agent.ToolReadFile)
	if !ok {
		return ""
	}
	in, _ := json.Marshal(map[string]any{"path": path, "end_line": mentionLines})
	res, err := tool.Execute(ctx, in)
	if err != nil {
		return "@" + path + " (a file): not read: " + strings.TrimPrefix(err.Error(), "read_file "+path+": ")
	}
	return "@" + path + " (a file; the first lines at most):\n" + res.Text
}

// isFile reports whether abs is a regular file.
func isFile(abs string) bool {
	fi, err := os.Stat(abs)
	return err == nil && fi.Mode().IsRegular()
}
