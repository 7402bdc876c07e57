package bridge

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/session"
)

// magicEdit is %agent edit TS|#N TEXT: it rewinds to before the prompt
// at TS|#N and runs TEXT as the cell's prompt, which answers the cell.
func (b *Bridge) magicEdit(ctx context.Context, c magicCall) (string, error) {
	rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(c.line), "%agent"))
	rest = strings.TrimSpace(strings.TrimPrefix(rest, "edit"))
	ref, text, _ := strings.Cut(rest, " ")
	text = strings.TrimSpace(text)
	if ref == "" || text == "" {
		return "", c.usageError()
	}
	if _, err := b.host.Current(ctx); err != nil {
		return "", err
	}
	ts, err := b.host.Conversation().Ref(ref)
	if err != nil {
		return "", err
	}
	rw, err := b.host.World().Rewind(ctx, ts, session.RewindOptions{ConfirmReplay: b.confirmReplay(c.r)})
	if err != nil {
		return "", err
	}
	if err := c.r.Publish(wire.MsgStream, wire.Stream{Name: "stdout", Text: rw.Summary() + "\n"}); err != nil {
		b.log.Debug("publish rewind", "error", err)
	}
	b.prompt(ctx, c.r, text, c.count)
	return "", nil
}

// magicRewind runs %agent rewind and %agent fork: REF and the options in
// any order.
func (b *Bridge) magicRewind(ctx context.Context, c magicCall) (string, error) {
	usage := fmt.Errorf("usage: %%agent %s TS|#N [--conversation-only|--no-files|--no-kernel] [--force]", c.name)
	opts := session.RewindOptions{ConfirmReplay: b.confirmReplay(c.r)}
	ref := ""
	for _, a := range c.args {
		switch a {
		case "--conversation-only":
			opts.ConversationOnly = true
		case "--no-files":
			opts.NoFiles = true
		case "--no-kernel":
			opts.NoKernel = true
		case "--force":
			opts.Force = true
		default:
			if ref != "" || strings.HasPrefix(a, "-") {
				return "", usage
			}
			ref = a
		}
	}
	if ref == "" {
		return "", usage
	}
	if _, err := b.host.Current(ctx); err != nil {
		return "", err
	}
	ts, err := b.host.Conversation().Ref(ref)
	if err != nil {
		return "", err
	}
	if c.name == "fork" {
		info, rw, err := b.host.World().Fork(ctx, ts, opts)
		if err != nil {
			return "", err
		}
		out := fmt.Sprintf("Forked: new session %s holds the %d messages before %s; the original is unchanged.", info.ID, info.Messages, ref)
		if rw.Files != nil || len(rw.Kernel) > 0 || rw.KernelNote != "" {
			summary := rw.Summary()
			if _, rest, ok := strings.Cut(summary, "\n"); ok {
				out += "\n" + rest
			}
		}
		return out, nil
	}
	rw, err := b.host.World().Rewind(ctx, ts, opts)
	if err != nil {
		return "", err
	}
	return rw.Summary(), nil
}

// confirmReplay asks, before a rewind restarts the kernel and replays
// code, on the frontend's stdin when it allows it; headless, the approval
// policy decides (all: yes).
func (b *Bridge) confirmReplay(r *kernel.Request) func(context.Context, []session.CodeRun) bool {
	return func(ctx context.Context, code []session.CodeRun) bool {
		if !r.AllowStdin() {
			return b.cfg.Approve == agent.ApproveAll
		}
		var sb strings.Builder
		fmt.Fprintf(&sb, "The kernel will be restarted and %d cells run again:\n", len(code))
		for i, c := range code {
			fmt.Fprintf(&sb, "  [%d] %s\n", i+1, firstLineOf(c.Code, 70))
		}
		sb.WriteString("Replay? [y]es / [n]o (the kernel keeps its current state): ")
		prompt := sb.String()
		for {
			in, err := r.Input(ctx, prompt, false)
			if err != nil {
				return false
			}
			switch strings.ToLower(strings.TrimSpace(in)) {
			case "y", "yes":
				return true
			case "n", "no":
				return false
			}
			prompt = "Please answer y (yes) or n (no): "
		}
	}
}

func firstLineOf(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if rs := []rune(s); len(rs) > n {
		s = string(rs[:n]) + "…"
	}
	return s
}
