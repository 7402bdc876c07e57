package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/messages"
)

// Inline completions: what the user's cell goes on with, as ghost text in
// the editor. The model is told the cell around the cursor, the cells
// near it, and the live kernel's namespace (its variables, a table's
// columns, a function's signature), which no completer that reads the
// editor alone knows. Nothing of it reaches the session's history; its
// tokens and cost are counted (Task.Charge).

// CompletionRequest is the cell being typed in and what is around it.
type CompletionRequest struct {
	// Prefix and Suffix are the cell's text before and after the cursor.
	Prefix, Suffix string
	// Before and After are the sources of the code cells around it,
	// nearest last and first.
	Before, After []string
	// Namespace describes the kernel's variables, a line each
	// ("df: DataFrame (100, 3) [a: int64, …]").
	Namespace []string
	// Language is the kernel's ("python").
	Language string
}

// Completion bounds: the prompt's parts, and the answer.
const (
	completionMaxTokens    = 160
	completionContextChars = 6000 // the cells around, together
	completionCellChars    = 8000 // the cell itself, around the cursor
	completionNameLines    = 200
)

const completionSystem = `You complete code in a Jupyter notebook cell, as an editor's ghost text.
Answer with the text to insert at <CURSOR> only: no explanation, no code fences, nothing that is already
before or after the cursor. Use the kernel's variables and their columns and signatures as they are. Keep it
short: the rest of the line, or a few lines at most. If nothing fits, answer nothing.`

// completionPrompt is the user message of a completion request.
func completionPrompt(r CompletionRequest) string {
	var b strings.Builder
	lang := r.Language
	if lang == "" {
		lang = "python"
	}
	if len(r.Namespace) > 0 {
		b.WriteString("The kernel's variables:\n")
		for i, l := range r.Namespace {
			if i == completionNameLines {
				fmt.Fprintf(&b, "… and %d more\n", len(r.Namespace)-i)
				break
			}
			b.WriteString(l + "\n")
		}
		b.WriteString("\n")
	}
	budget := completionContextChars
	var before []string
	for i := len(r.Before) - 1; i >= 0 && budget > 0; i-- {
		s := tail(r.Before[i], budget)
		budget -= len(s)
		before = append([]string{s}, before...)
	}
	if len(before) > 0 {
		fmt.Fprintf(&b, "Cells before it:\n```%s\n%s\n```\n\n", lang, strings.Join(before, "\n\n"))
	}
	var after []string
	for _, c := range r.After {
		if budget <= 0 {
			break
		}
		s := head(c, budget)
		budget -= len(s)
		after = append(after, s)
	}
	if len(after) > 0 {
		fmt.Fprintf(&b, "Cells after it:\n```%s\n%s\n```\n\n", lang, strings.Join(after, "\n\n"))
	}
	fmt.Fprintf(&b, "The cell (complete it at <CURSOR>):\n```%s\n%s<CURSOR>%s\n```", lang,
		tail(r.Prefix, completionCellChars*3/4), head(r.Suffix, completionCellChars/4))
	return b.String()
}

// head and tail are s's first and last n bytes, on rune boundaries.
func head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[len(s)-n:], "")
}

// Complete asks prov what goes at the cursor of r's cell and returns the
// text (without a code fence the model may add anyway) and the request's
// usage. ctx ends it early (the user typed on).
func Complete(ctx context.Context, prov provider.Provider, r CompletionRequest) (string, provider.Usage, error) {
	req := provider.Request{System: completionSystem, MaxTokens: completionMaxTokens, Messages: []messages.APIMessage{{
		Role: messages.RoleUser, Content: []messages.ContentBlock{{Type: messages.BlockText, Text: completionPrompt(r)}}}}}
	s, err := prov.Stream(ctx, req)
	if err != nil {
		return "", provider.Usage{}, err
	}
	defer s.Close()
	var b strings.Builder
	var u provider.Usage
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", u, err
		}
		switch ev.Type {
		case provider.EventText:
			b.WriteString(ev.Text)
		case provider.EventUsage:
			if ev.Usage != nil {
				u = *ev.Usage
			}
		}
	}
	return cleanCompletion(b.String(), r.Prefix), u, nil
}

// cleanCompletion drops what a model adds around the insertion anyway: a
// code fence, and the line start it repeats from before the cursor.
func cleanCompletion(s, prefix string) string {
	s = strings.TrimSuffix(strings.TrimRight(s, " \n"), "```")
	if strings.HasPrefix(strings.TrimSpace(s), "```") {
		s = strings.TrimSpace(s)
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		} else {
			s = ""
		}
	}
	s = strings.TrimRight(s, "\n")
	line := prefix[strings.LastIndexByte(prefix, '\n')+1:]
	if line != "" && strings.HasPrefix(s, line) {
		s = s[len(line):]
	}
	return s
}

// Charge adds the usage and cost of a request made outside the
// conversation (an inline completion) to the session's totals and its
// stored cost; nothing goes to the history.
func (t *Task) Charge(ctx context.Context, u provider.Usage, cost float64) {
	t.mu.Lock()
	t.totals.InputTokens += u.InputTokens
	t.totals.OutputTokens += u.OutputTokens
	t.totals.CacheReadTokens += u.CacheReadTokens
	t.totals.CacheWriteTokens += u.CacheWriteTokens
	t.totals.Cost += cost
	totals := t.totals
	t.mu.Unlock()
	if err := t.cfg.Store.AddUsage(ctx, t.cfg.SessionID, u, cost); err != nil {
		t.log.Warn("store a completion's usage", "error", err)
	}
	t.lis.Emit(Event{Kind: EventTokenUsage, Usage: totals})
}
