package openai

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// The fast path (decodeText) is checked against the SDK's own decoding of
// the same bytes: chunk by chunk (TestFastText, FuzzFastText), and whole
// streams, events and errors alike, with and without it
// (TestFastPathEvents). TestReplay checks that an event replayed alone
// through the SDK's stream (what sdkEvent does) is decoded as the SDK's
// stream over the whole body decodes it.

// okResp stands for the streaming response an event came in.
var okResp = &http.Response{Status: "200 OK", StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
	Request: &http.Request{Method: http.MethodPost}}

// viaDecoder is data as the SDK's SSE decoder hands it out: what the fast
// path and the SDK both read.
func viaDecoder(t testing.TB, data []byte) (ssestream.Event, bool) {
	t.Helper()
	d := ssestream.NewDecoder(provider.Replay(okResp, "", data))
	if !d.Next() {
		return ssestream.Event{}, false
	}
	return d.Event(), true
}

// sdkText is the SDK's reading of one chunk as the stream turns it into
// text: what decodeText must give whenever it accepts the chunk. eligible
// is false when the chunk says more than text (tool calls, usage), and
// err is set when the SDK's stream ends on it ([DONE] as io.EOF).
func sdkText(data []byte) (c textChunk, eligible bool, err error) {
	one := ssestream.NewStream[sdk.ChatCompletionChunk](ssestream.NewDecoder(provider.Replay(okResp, "", data)), nil)
	if !one.Next() {
		if one.Err() == nil {
			return c, false, io.EOF
		}
		return c, false, one.Err()
	}
	ch := one.Current()
	if ch.JSON.Usage.Valid() || hasToolCalls(ch) {
		return c, false, nil
	}
	c.id = []byte(ch.ID)
	for _, choice := range ch.Choices {
		if choice.Index != 0 {
			return c, false, nil
		}
		d := choice.Delta
		c.reasoningContent = extraString(d.JSON.ExtraFields, "reasoning_content")
		c.reasoning = extraString(d.JSON.ExtraFields, "reasoning")
		c.content, c.refusal, c.finish = d.Content, d.Refusal, choice.FinishReason
	}
	return c, true, nil
}

// checkFast decodes data both ways; it reports whether the fast path took
// it, and fails t when the two disagree.
func checkFast(t testing.TB, data string) bool {
	t.Helper()
	ev, ok := viaDecoder(t, []byte(data))
	if !ok {
		return false
	}
	fast, ok := decodeText(ev.Data)
	if !ok {
		return false
	}
	ref, eligible, err := sdkText(ev.Data)
	if err != nil || !eligible {
		t.Fatalf("the fast path took %q, which the SDK reads as more than text (eligible %v) or fails on (%v)", ev.Data, eligible, err)
	}
	if string(fast.id) != string(ref.id) {
		t.Fatalf("%q: id %q, the SDK's %q", ev.Data, fast.id, ref.id)
	}
	fast.id, ref.id = nil, nil
	if !reflect.DeepEqual(fast, ref) {
		t.Fatalf("%q:\nfast %+v\n sdk %+v", ev.Data, fast, ref)
	}
	return true
}

// chunkCases are chunks as servers send them, and shapes a server could:
// whether the fast path takes each (when it does, checkFast compares).
var chunkCases = []struct {
	name string
	data string
	fast bool
}{
	{"openai text", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","service_tier":"default","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"ab12"}`, true},
	{"openai first", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`, true},
	{"openai finish", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}`, true},
	{"openai usage", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11,"prompt_tokens_details":{"cached_tokens":0}}}`, false},
	{"vllm usage with null choices", `{"id":"cmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":null,"usage":{"prompt_tokens":9,"completion_tokens":2}}`, false},
	{"empty choices", `{"id":"x","choices":[]}`, true},
	{"vllm reasoning_content", `{"id":"cmpl-1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{"reasoning_content":"Let me think"},"logprobs":null,"finish_reason":null}]}`, true},
	{"llama.cpp reasoning_content and null content", `{"choices":[{"finish_reason":null,"index":0,"delta":{"content":null,"reasoning_content":" step"}}],"created":1,"id":"chatcmpl-x","model":"gpt-oss","system_fingerprint":"b1-abc","object":"chat.completion.chunk","timings":{"prompt_n":1,"predicted_ms":1.5}}`, true},
	{"reasoning (others)", `{"id":"x","choices":[{"index":0,"delta":{"reasoning":"hmm"},"finish_reason":null}]}`, true},
	{"both reasoning fields", `{"id":"x","choices":[{"index":0,"delta":{"reasoning_content":"","reasoning":"b"}}]}`, true},
	{"refusal", `{"id":"x","choices":[{"index":0,"delta":{"refusal":"I can't"},"finish_reason":null}]}`, true},
	{"tool call start", `{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]},"finish_reason":null}]}`, false},
	{"tool call arguments", `{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\""}}]},"finish_reason":null}]}`, false},
	{"empty tool calls", `{"id":"x","choices":[{"index":0,"delta":{"content":"a","tool_calls":[]}}]}`, true},
	{"null tool calls", `{"id":"x","choices":[{"index":0,"delta":{"content":"a","tool_calls":null,"function_call":null}}]}`, true},
	{"error chunk", `{"error":{"message":"boom","type":"server_error"}}`, false},
	{"error beside choices", `{"id":"x","choices":[],"error":null}`, false},
	{"done", `[DONE]`, false},
	{"escapes", `{"id":"x","choices":[{"index":0,"delta":{"content":"a\n\"b\"\\ \/ \t\r\b\f \u00e9\u4e2d"}}]}`, true},
	{"surrogate pair", `{"id":"x","choices":[{"index":0,"delta":{"content":"\ud83d\ude00"}}]}`, false},
	{"lone surrogate", `{"id":"x","choices":[{"index":0,"delta":{"content":"\ud83d x"}}]}`, false},
	{"raw unicode", `{"id":"x","choices":[{"index":0,"delta":{"content":"héllo 世界 😀"}}]}`, true},
	{"invalid utf-8", "{\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\xff\"}}]}", false},
	{"control character", "{\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\x01\"}}]}", false},
	{"content not a string", `{"id":"x","choices":[{"index":0,"delta":{"content":5}}]}`, false},
	{"content an object", `{"id":"x","choices":[{"index":0,"delta":{"content":{"a":1}}}]}`, false},
	{"another choice", `{"id":"x","choices":[{"index":1,"delta":{"content":"b"}}]}`, false},
	{"two choices", `{"id":"x","choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}}]}`, false},
	{"index as float", `{"id":"x","choices":[{"index":0.0,"delta":{"content":"a"}}]}`, false},
	{"no index", `{"id":"x","choices":[{"delta":{"content":"a"}}]}`, true},
	{"null delta", `{"id":"x","choices":[{"index":0,"delta":null,"finish_reason":"length"}]}`, true},
	{"unknown finish reason", `{"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"eos"}]}`, true},
	{"repeated content", `{"id":"x","choices":[{"index":0,"delta":{"content":"a","content":"b"}}]}`, false},
	{"repeated choices", `{"id":"x","choices":[],"choices":[{"index":0,"delta":{"content":"b"}}]}`, false},
	{"escaped key", `{"id":"x","choices":[{"index":0,"delta":{"cont\u0065nt":"a"}}]}`, false},
	{"key in other case", `{"id":"x","Choices":[{"index":0,"delta":{"content":"a"}}]}`, true},
	{"nested unknowns", `{"id":"x","extra":{"a":[1,-2.5e+3,true,false,null,"s\"",{"b":[]}]},"choices":[{"index":0,"delta":{"content":"a","audio":{"id":"au"}},"logprobs":{"content":[{"token":"a","logprob":-0.1,"bytes":[97],"top_logprobs":[]}]}}]}`, true},
	{"whitespace", " {\n \"id\" : \"x\" ,\t\"choices\" : [ { \"index\" : 0 , \"delta\" : { \"content\" : \"a\" } } ] } \r\n", true},
	{"trailing garbage", `{"id":"x","choices":[]} x`, false},
	{"two objects", `{"id":"x"}{"id":"y"}`, false},
	{"truncated", `{"id":"x","choices":[{"index":0,"delta":{"content":"a`, false},
	{"bad number", `{"id":"x","n":01,"choices":[]}`, false},
	{"id not a string", `{"id":7,"choices":[]}`, false},
	{"not an object", `"text"`, false},
	{"multi-line data", "{\"id\":\"x\",\n\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}", true},
}

func TestFastText(t *testing.T) {
	for _, tc := range chunkCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkFast(t, tc.data); got != tc.fast {
				t.Errorf("fast path took it: %v, want %v", got, tc.fast)
			}
		})
	}
}

func FuzzFastText(f *testing.F) {
	for _, tc := range chunkCases {
		f.Add([]byte(tc.data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFast(t, string(data))
	})
}

// streamBodies are whole streams: the scripted server's for many turns,
// and raw ones in other servers' shapes.
func streamBodies(t *testing.T) map[string][]byte {
	turns := map[string]scripted.Turn{
		"text": scripted.Reply(scripted.Text("Hel", "lo", " wor\nld", ""), scripted.UsageStep(scripted.Usage{Input: 10, Output: 3, CacheRead: 4})),
		"reasoning then text": scripted.Reply(scripted.Reasoning("thin", "king"), scripted.Text("answer"),
			scripted.UsageStep(scripted.Usage{Input: 1, Output: 1})),
		"tool call split across chunks": scripted.Reply(scripted.Text("let me look"), scripted.ToolCall("call_1", "read_file", `{"pa`, `th"`, `: "a`, `.txt"`, `}`)),
		"parallel tool calls": scripted.Reply(scripted.ToolCall("call_a", "read_file", `{"path":`, `"a"}`),
			scripted.ToolCall("call_b", "list_files"), scripted.Text("and"), scripted.UsageStep(scripted.Usage{Input: 5, Output: 7})),
		"null choices usage":   scripted.Reply(scripted.Text("ok"), scripted.UsageStep(scripted.Usage{Input: 3, Output: 1, NullChoices: true})),
		"pings":                scripted.Reply(scripted.Ping(), scripted.Text("a"), scripted.Ping()),
		"max tokens":           scripted.Reply(scripted.Text("cut"), scripted.Stop("max_tokens")),
		"error mid-stream":     scripted.Reply(scripted.Text("partial"), scripted.StreamError("server_error", "the model crashed")),
		"garbage mid-stream":   scripted.Reply(scripted.Text("a"), scripted.Raw(`{not json`), scripted.Text("b")),
		"unicode and escapes":  scripted.Reply(scripted.Text("é", "\"q\"", "\\", "😀", "\x00", "\t")),
		"refusal-like content": scripted.Reply(scripted.Raw(`{"id":"r","choices":[{"index":0,"delta":{"refusal":"no"},"finish_reason":"content_filter"}]}`)),
		"id only in later chunks": scripted.Reply(scripted.Raw(`{"choices":[{"index":0,"delta":{"content":"a"}}]}`),
			scripted.Raw(`{"id":"late","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`)),
	}
	bodies := map[string][]byte{}
	for name, turn := range turns {
		b, err := scripted.Record("openai", turn)
		if err != nil {
			t.Fatal(err)
		}
		bodies[name] = b
	}
	// vLLM: reasoning, text, a tool call, usage with null choices, no
	// [DONE] before the end of the body.
	bodies["vllm without [DONE]"] = []byte("data: {\"id\":\"v\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
		"data: {\"id\":\"v\",\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"hm\"}}]}\n\n" +
		"data: {\"id\":\"v\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: {\"id\":\"v\",\"choices\":null,\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2}}\n\n")
	// Data split over several lines, CRLF line ends, comments.
	bodies["multi-line data, CRLF"] = []byte(": keep-alive\r\n\r\ndata: {\"id\":\"m\",\r\ndata: \"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\r\n\r\n" +
		"data: [DONE]\r\n\r\n")
	return bodies
}

// runBody streams body through a provider, with or without the fast path.
func runBody(t *testing.T, body []byte, sdkOnly bool) ([]provider.Event, error) {
	t.Helper()
	p, err := New(Config{APIKey: testKey, Model: "gpt-4.1", BaseURL: "http://model.invalid/v1",
		HTTPClient: &http.Client{Transport: scripted.Canned{Body: body}}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Stream(context.Background(), simpleReq())
	if err != nil {
		return nil, err
	}
	s.(*stream).sdkOnly = sdkOnly
	return collect(t, s)
}

func TestFastPathEvents(t *testing.T) {
	for name, body := range streamBodies(t) {
		t.Run(name, func(t *testing.T) {
			fast, ferr := runBody(t, body, false)
			ref, rerr := runBody(t, body, true)
			if !reflect.DeepEqual(fast, ref) {
				t.Errorf("events\nfast %s\n sdk %s", dump(fast), dump(ref))
			}
			if (ferr == nil) != (rerr == nil) || ferr != nil && ferr.Error() != rerr.Error() {
				t.Errorf("errors: fast %v, sdk %v", ferr, rerr)
			}
			if len(fast) == 0 && ferr == nil {
				t.Error("no events")
			}
		})
	}
}

func TestReplay(t *testing.T) {
	for name, body := range streamBodies(t) {
		t.Run(name, func(t *testing.T) {
			resp := func() *http.Response {
				r := *okResp
				r.Body = io.NopCloser(bytes.NewReader(body))
				return &r
			}
			// The SDK's stream over the whole body.
			whole := ssestream.NewStream[sdk.ChatCompletionChunk](ssestream.NewDecoder(resp()), nil)
			var want []string
			for whole.Next() {
				want = append(want, whole.Current().RawJSON())
			}
			wantErr := whole.Err()
			// Each raw event alone through a stream of its own.
			var got []string
			var gotErr error
			d := ssestream.NewDecoder(resp())
			for d.Next() {
				one := ssestream.NewStream[sdk.ChatCompletionChunk](ssestream.NewDecoder(provider.Replay(okResp, d.Event().Type, d.Event().Data)), nil)
				if one.Next() {
					got = append(got, one.Current().RawJSON())
					continue
				}
				gotErr = one.Err()
				if gotErr == nil {
					gotErr = io.EOF // [DONE]
				}
				break
			}
			if errors.Is(gotErr, io.EOF) {
				gotErr = nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("chunks\nreplayed %q\n   whole %q", got, want)
			}
			if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
				t.Errorf("errors: replayed %v, whole %v", gotErr, wantErr)
			}
		})
	}
	// A data line that ends in a CR of its own keeps it.
	ev, ok := viaDecoder(t, []byte("a\r\n"))
	if !ok || !strings.HasPrefix(string(ev.Data), "a\r") {
		t.Errorf("replayed %q", ev.Data)
	}
}

func BenchmarkDecodeText(b *testing.B) {
	data := []byte(`{"id":"chatcmpl-scripted-1","object":"chat.completion.chunk","created":1764185000,"model":"gpt-4.1","service_tier":"default","system_fingerprint":"fp_scripted","choices":[{"index":0,"delta":{"content":"kernel "},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"Zq8x"}` + "\n")
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := decodeText(data); !ok {
			b.Fatal("declined")
		}
	}
}
