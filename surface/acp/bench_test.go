package acp

import (
	"context"
	"slices"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/openai"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/session/surfacetest"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// BenchmarkFirstChunk is ACP's time to first words: session/prompt sent →
// the first agent_message_chunk received by an SDK client over pipes,
// beside the model's own time to its first token (the OpenAI provider
// streaming from the same scripted server, directly, sent the same
// history), the two taking turns. It reports both p50s and the overhead (their difference), in ms:
// what agentkernel adds — the prompt stored, the session's context, the
// request built, the chunk sent.
func BenchmarkFirstChunk(b *testing.B) {
	h := surfacetest.NewHost(b)
	e := &editor{open: func(string) (*session.Host, func() error, error) { return h.Host, func() error { return nil }, nil },
		cwd: h.Workspace()}
	ctx := context.Background()
	first := make(chan struct{}, 1)
	e.chunk = func() {
		select {
		case first <- struct{}{}:
		default:
		}
	}
	if err := e.connect(ctx, func(c *sdk.ClientSideConnection) error {
		resp, err := c.NewSession(ctx, sdk.NewSessionRequest{Cwd: e.cwd, McpServers: []sdk.McpServer{}})
		e.sid = resp.SessionId
		return err
	}); err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	direct, err := openai.New(openai.Config{APIKey: "k", BaseURL: h.Script.OpenAIURL(), Model: "scripted"})
	if err != nil {
		b.Fatal(err)
	}
	var viaACP, viaModel []time.Duration
	b.ResetTimer()
	for b.Loop() {
		// The model directly, sent the history the session's next request
		// will send: the requests weigh the same.
		req := provider.Request{Messages: append(messages.Effective(h.Conversation().API()), messages.APIMessage{Role: messages.RoleUser, TS: 1,
			Content: []messages.ContentBlock{{Type: messages.BlockText, Text: "Say hi"}}})}
		h.Script.Enqueue(scripted.Reply(scripted.Text("Hi", " there.")))
		t0 := time.Now()
		s, err := direct.Stream(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		for {
			ev, err := s.Next()
			if err != nil {
				b.Fatal(err)
			}
			if ev.Type == provider.EventText {
				viaModel = append(viaModel, time.Since(t0))
				break
			}
		}
		s.Close()
		// Through ACP.
		h.Script.Enqueue(scripted.Reply(scripted.Text("Hi", " there.")))
		select {
		case <-first: // the last turn's later chunks
		default:
		}
		t0 = time.Now()
		done := make(chan error, 1)
		go func() {
			_, err := e.send(ctx, "Say hi")
			done <- err
		}()
		select {
		case <-first:
			viaACP = append(viaACP, time.Since(t0))
		case err := <-done:
			b.Fatalf("the prompt ended before its first chunk: %v", err)
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		e.take()
	}
	b.StopTimer()
	p50 := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	b.ReportMetric(ms(p50(viaModel)), "model-first-token-p50-ms")
	b.ReportMetric(ms(p50(viaACP)), "acp-first-chunk-p50-ms")
	b.ReportMetric(ms(p50(viaACP)-p50(viaModel)), "overhead-p50-ms")
}
