package bridge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif"  // image sizes for the model's summary
	_ "image/jpeg" // "
	_ "image/png"  // "
	"strings"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
)

// codeRunner runs the agent's execute_code in the backing kernel. The
// outputs go to the notebook cell that is running the prompt (unchanged,
// with that cell's request as parent) and, summarised, to the model.
type codeRunner struct{ b *Bridge }

// Run implements agent.CodeRunner.
func (cr *codeRunner) Run(ctx context.Context, code string) (agent.CodeResult, error) {
	b := cr.b
	k, err := b.kernelFor(ctx)
	if err != nil {
		return agent.CodeResult{}, err
	}
	cell := b.currentCell()
	var res agent.CodeResult
	var stdout, stderr, result strings.Builder
	h := client.Handlers{IOPub: func(m *wire.Message) {
		if cell != nil {
			cell.relayCode(m)
		}
		collect(m, &stdout, &stderr, &result, &res)
	}}
	done := make(chan struct{})
	defer close(done)
	go func() {
		// Cancelling the turn interrupts the code, as a user's interrupt would.
		select {
		case <-ctx.Done():
			ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5e9)
			defer cancel()
			if err := k.Interrupt(ictx); err != nil {
				b.log.Warn("interrupt agent code", "error", err)
			}
		case <-done:
		}
	}()
	// The reply comes after the KeyboardInterrupt: wait for it without ctx
	// so the backing kernel's queue stays in step, bounded by the bridge.
	rep, err := k.Client().Execute(b.ctx, code, client.ExecuteOptions{}, h)
	if err != nil {
		if errors.Is(err, client.ErrDead) {
			return res, fmt.Errorf("the backing kernel (%s) died while running the code; it restarts at the next execution", b.cfg.Backing)
		}
		return res, err
	}
	var c struct {
		Status string `json:"status"`
		Ename  string `json:"ename"`
		Evalue string `json:"evalue"`
	}
	_ = rep.DecodeContent(&c)
	if c.Status == "error" && res.Error == nil {
		res.Error = &agent.CodeError{EName: c.Ename, EValue: c.Evalue}
	}
	res.Stdout, res.Stderr, res.Result = stdout.String(), stderr.String(), result.String()
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

// collect adds one backing iopub message to the model's view of the run.
func collect(m *wire.Message, stdout, stderr, result *strings.Builder, res *agent.CodeResult) {
	switch m.Header.MsgType {
	case "stream":
		var c struct{ Name, Text string }
		if m.DecodeContent(&c) == nil {
			if c.Name == "stderr" {
				stderr.WriteString(c.Text)
			} else {
				stdout.WriteString(c.Text)
			}
		}
	case "execute_result", "display_data", "update_display_data":
		var c struct {
			Data map[string]json.RawMessage `json:"data"`
		}
		if m.DecodeContent(&c) != nil {
			return
		}
		imaged := false
		for mime, raw := range c.Data {
			if strings.HasPrefix(mime, "image/") {
				res.Images = append(res.Images, imageInfo(mime, raw))
				imaged = true
			}
		}
		if !imaged {
			var txt string
			if json.Unmarshal(c.Data["text/plain"], &txt) == nil && txt != "" {
				result.WriteString(txt)
				result.WriteString("\n")
			}
		}
	case "error":
		var c struct {
			Ename     string   `json:"ename"`
			Evalue    string   `json:"evalue"`
			Traceback []string `json:"traceback"`
		}
		if m.DecodeContent(&c) == nil {
			res.Error = &agent.CodeError{EName: c.Ename, EValue: c.Evalue, Traceback: c.Traceback}
		}
	}
}

// imageInfo describes an image output without keeping it.
func imageInfo(mime string, raw json.RawMessage) agent.Image {
	im := agent.Image{MIME: mime}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return im
	}
	if mime == "image/svg+xml" {
		im.Bytes = len(s)
		return im
	}
	data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return im
	}
	im.Bytes = len(data)
	if cfg, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
		im.Width, im.Height = cfg.Width, cfg.Height
	}
	return im
}

// relayCode forwards the backing kernel's outputs of agent code to the
// cell. Status and execute_input are the backing kernel's bookkeeping and
// stay there.
func (c *cellOut) relayCode(m *wire.Message) {
	switch m.Header.MsgType {
	case "status", "execute_input":
		return
	}
	if err := c.r.PublishRaw(m.Header.MsgType, m.Content, m.Metadata, m.Buffers); err != nil {
		c.b.log.Debug("relay agent output", "error", err)
	}
}

var _ = kernel.Request{}
