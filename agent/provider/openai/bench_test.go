package openai

import (
	"net/http"
	"testing"

	"github.com/agentkernel/agentkernel/agent/provider/internal/providertest"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// BenchmarkChunk is the provider's own cost per streamed chunk: a
// 2,000-word answer in the scripted server's bytes (OpenAI's format, with
// usage), served from memory so that no server's work is counted, read
// to its end through the SDK's request path and this package's decoding.
func BenchmarkChunk(b *testing.B) {
	const n = 2000
	body, err := scripted.Record("openai", scripted.Reply(scripted.Text(providertest.Words(n)...),
		scripted.UsageStep(scripted.Usage{Input: 10, Output: n})))
	if err != nil {
		b.Fatal(err)
	}
	p, err := New(Config{APIKey: testKey, Model: "gpt-4.1", BaseURL: "http://model.invalid/v1",
		HTTPClient: &http.Client{Transport: scripted.Canned{Body: body}}})
	if err != nil {
		b.Fatal(err)
	}
	providertest.Chunks(b, p, simpleReq(), n)
}
