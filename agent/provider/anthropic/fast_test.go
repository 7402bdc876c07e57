package anthropic

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"reflect"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/ssestream"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// The fast path (decodeDelta) is checked against the SDK's own decoding of
// the same bytes: event by event (TestFastDelta, FuzzFastDelta), and whole
// streams, events and errors alike, with and without it
// (TestFastPathEvents). TestReplay checks that an event replayed alone
// through the SDK's stream (what sdkEvent does) is decoded as the SDK's
// stream over the whole body decodes it, error events included.

// okResp stands for the streaming response an event came in.
var okResp = &http.Response{Status: "200 OK", StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
	Request: &http.Request{Method: http.MethodPost}}

// viaDecoder is an event as the SDK's SSE decoder hands it out: what the
// fast path and the SDK both read.
func viaDecoder(t testing.TB, typ string, data []byte) (ssestream.Event, bool) {
	t.Helper()
	d := ssestream.NewDecoder(provider.Replay(okResp, typ, data))
	if !d.Next() {
		return ssestream.Event{}, false
	}
	return d.Event(), true
}

// sdkDelta is the SDK's reading of one event as the stream turns it into
// text: what decodeDelta must give whenever it accepts the event. eligible
// is false for any other event, err set when the SDK fails on it.
func sdkDelta(ev ssestream.Event) (d textDelta, eligible bool, err error) {
	one := ssestream.NewStream[sdk.MessageStreamEventUnion](ssestream.NewDecoder(provider.Replay(okResp, ev.Type, ev.Data)), nil)
	if !one.Next() {
		return d, false, one.Err()
	}
	e := one.Current()
	if e.Type != "content_block_delta" {
		return d, false, nil
	}
	switch e.Delta.Type {
	case "text_delta":
		return textDelta{text: e.Delta.Text}, true, nil
	case "thinking_delta":
		return textDelta{thinking: true, text: e.Delta.Thinking}, true, nil
	}
	return d, false, nil
}

// checkFast decodes an event both ways; it reports whether the fast path
// took it, and fails t when the two disagree.
func checkFast(t testing.TB, typ, data string) bool {
	t.Helper()
	ev, ok := viaDecoder(t, typ, []byte(data))
	if !ok || ev.Type != "content_block_delta" {
		return false // the stream gives the SDK every other event
	}
	fast, ok := decodeDelta(ev.Data)
	if !ok {
		return false
	}
	ref, eligible, err := sdkDelta(ev)
	if err != nil || !eligible {
		t.Fatalf("the fast path took %q, which the SDK reads as another event (eligible %v) or fails on (%v)", ev.Data, eligible, err)
	}
	if fast != ref {
		t.Fatalf("%q:\nfast %+v\n sdk %+v", ev.Data, fast, ref)
	}
	return true
}

const cbd = "content_block_delta"

// eventCases are events as Anthropic sends them, and shapes a server could:
// whether the fast path takes each (when it does, checkFast compares).
var eventCases = []struct {
	name, typ, data string
	fast            bool
}{
	{"text", cbd, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`, true},
	{"thinking", cbd, `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me"}}`, true},
	{"empty text", cbd, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}`, true},
	{"signature", cbd, `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}}`, false},
	{"input json", cbd, `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"loc"}}`, false},
	{"citation", cbd, `{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{"type":"char_location","cited_text":"x"}}}`, false},
	{"message start", "message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude","stop_reason":null,"usage":{"input_tokens":25,"output_tokens":1}}}`, false},
	{"block start", "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`, false},
	{"block stop", "content_block_stop", `{"type":"content_block_stop","index":0}`, false},
	{"message delta", "message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}`, false},
	{"message stop", "message_stop", `{"type":"message_stop"}`, false},
	{"ping", "ping", `{"type": "ping"}`, false},
	{"error", "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, false},
	{"text under another event name", "message_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}`, false},
	{"keys in another order", cbd, `{"delta":{"text":"a","type":"text_delta"},"index":3,"type":"content_block_delta"}`, true},
	{"text in a thinking delta", cbd, `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","text":"x","thinking":"y"}}`, true},
	{"null text", cbd, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":null}}`, true},
	{"no delta type", cbd, `{"type":"content_block_delta","index":0,"delta":{"text":"a"}}`, false},
	{"no type", cbd, `{"index":0,"delta":{"type":"text_delta","text":"a"}}`, false},
	{"no delta", cbd, `{"type":"content_block_delta","index":0}`, false},
	{"escapes", cbd, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\n\"b\"\\ \/ \t\u00e9"}}`, true},
	{"surrogate pair", cbd, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\ud83d\ude00"}}`, false},
	{"raw unicode", cbd, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"世界 😀"}}`, true},
	{"invalid utf-8", cbd, "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"\xfe\"}}", false},
	{"text not a string", cbd, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":1}}`, false},
	{"escaped type", cbd, `{"type":"content_block_d\u0065lta","index":0,"delta":{"type":"text_delta","text":"a"}}`, false},
	{"repeated text", cbd, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a","text":"b"}}`, false},
	{"unknown fields", cbd, `{"type":"content_block_delta","index":0,"x":[1,{"y":null}],"delta":{"type":"text_delta","text":"a","z":2.5e-3}}`, true},
	{"index as float", cbd, `{"type":"content_block_delta","index":0.5,"delta":{"type":"text_delta","text":"a"}}`, true},
	{"trailing garbage", cbd, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}]`, false},
	{"not json", cbd, `{not json`, false},
}

func TestFastDelta(t *testing.T) {
	for _, tc := range eventCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkFast(t, tc.typ, tc.data); got != tc.fast {
				t.Errorf("fast path took it: %v, want %v", got, tc.fast)
			}
		})
	}
}

func FuzzFastDelta(f *testing.F) {
	for _, tc := range eventCases {
		if tc.typ == cbd {
			f.Add([]byte(tc.data))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFast(t, cbd, string(data))
	})
}

// streamBodies are whole streams: the scripted server's for many turns,
// and a raw one.
func streamBodies(t *testing.T) map[string][]byte {
	turns := map[string]scripted.Turn{
		"text with pings and usage": scripted.Reply(scripted.Ping(), scripted.Text("Hel", "lo"), scripted.Ping(), scripted.Text(" wor\nld", ""),
			scripted.UsageStep(scripted.Usage{Input: 10, Output: 3, CacheRead: 100, CacheWrite: 50})),
		"thinking with signature":       scripted.Reply(scripted.Reasoning("thin", "king"), scripted.Signature("c2lnbmF0dXJl"), scripted.Text("answer")),
		"tool call split across chunks": scripted.Reply(scripted.Text("let me look"), scripted.ToolCall("toolu_1", "read_file", `{"pa`, `th"`, `: "a`, `.txt"`, `}`)),
		"parallel tool calls": scripted.Reply(scripted.ToolCall("toolu_a", "read_file", `{"path":`, `"a"}`),
			scripted.ToolCall("toolu_b", "list_files"), scripted.Text("and")),
		"max tokens":            scripted.Reply(scripted.Text("cut"), scripted.Stop("max_tokens")),
		"overloaded mid-stream": scripted.Reply(scripted.Text("partial"), scripted.StreamError("overloaded_error", "Overloaded")),
		"invalid mid-stream":    scripted.Reply(scripted.Text("partial"), scripted.StreamError("invalid_request_error", "nope")),
		"garbage mid-stream":    scripted.Reply(scripted.Text("a"), scripted.Raw(`{not json`), scripted.Text("b")),
		"unicode and escapes":   scripted.Reply(scripted.Text("é", "\"q\"", "\\", "😀", "\x00", "\t")),
	}
	bodies := map[string][]byte{}
	for name, turn := range turns {
		b, err := scripted.Record("anthropic", turn)
		if err != nil {
			t.Fatal(err)
		}
		bodies[name] = b
	}
	// CRLF line ends, a comment, data over two lines, an unnamed event,
	// and a body that ends before message_stop.
	bodies["multi-line data, CRLF, cut short"] = []byte(": hello\r\n\r\n" +
		"event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"c\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\r\n\r\n" +
		"event: content_block_start\r\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\r\n\r\n" +
		"event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\r\ndata: \"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\"}}\r\n\r\n" +
		"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"unnamed\"}}\r\n\r\n")
	return bodies
}

// runBody streams body through a provider, with or without the fast path.
func runBody(t *testing.T, body []byte, sdkOnly bool) ([]provider.Event, error) {
	t.Helper()
	p, err := New(Config{APIKey: testKey, Model: "claude-sonnet-4-5", BaseURL: "http://model.invalid",
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
			if ae, ok := provider.AsAPIError(ferr); ferr != nil && (!ok || ae.Type == "") {
				t.Errorf("error %v is not a typed APIError", ferr)
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
			whole := ssestream.NewStream[sdk.MessageStreamEventUnion](ssestream.NewDecoder(resp()), nil)
			var want []string
			for whole.Next() {
				want = append(want, whole.Current().RawJSON())
			}
			wantErr := whole.Err()
			var got []string
			var gotErr error
			d := ssestream.NewDecoder(resp())
			for d.Next() {
				one := ssestream.NewStream[sdk.MessageStreamEventUnion](ssestream.NewDecoder(provider.Replay(okResp, d.Event().Type, d.Event().Data)), nil)
				if one.Next() {
					got = append(got, one.Current().RawJSON())
					continue
				}
				if gotErr = one.Err(); gotErr != nil {
					break
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("events\nreplayed %q\n   whole %q", got, want)
			}
			if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
				t.Errorf("errors: replayed %v, whole %v", gotErr, wantErr)
			}
			var gotAPI, wantAPI *sdk.Error
			if errors.As(gotErr, &gotAPI) != errors.As(wantErr, &wantAPI) ||
				gotAPI != nil && (gotAPI.RawJSON() != wantAPI.RawJSON() || gotAPI.StatusCode != wantAPI.StatusCode) {
				t.Errorf("API errors: replayed %#v, whole %#v", gotAPI, wantAPI)
			}
		})
	}
}
