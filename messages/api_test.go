package messages

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func fullAPI() []APIMessage {
	return []APIMessage{
		{Role: RoleUser, TS: 10, Content: []ContentBlock{
			{Type: BlockText, Text: "plot it"},
			{Type: BlockImage, Source: &ImageSource{Type: "base64", MediaType: "image/png", Data: "AAAA"}},
			{Type: BlockImage, Source: &ImageSource{Type: "url", URL: "https://example.com/a.png"}},
		}},
		{Role: RoleAssistant, TS: 11, CondenseParent: "c1", TruncationParent: "t1", Content: []ContentBlock{
			{Type: BlockThinking, Thinking: "hmm", Signature: "sig"},
			{Type: BlockText, Text: "running"},
			{Type: BlockToolUse, ID: "tu1", Name: "execute_code", Input: json.RawMessage(`{"code":"1+1"}`)},
		}},
		{Role: RoleUser, TS: 12, Content: []ContentBlock{
			{Type: BlockToolResult, ToolUseID: "tu1", IsError: true, Content: []ContentBlock{
				{Type: BlockText, Text: "2"},
				{Type: BlockImage, Source: &ImageSource{Type: "base64", MediaType: "image/png", Data: "BBBB"}},
			}},
		}},
		{Role: RoleUser, TS: 13, IsSummary: true, CondenseID: "c1", Content: []ContentBlock{{Type: BlockText, Text: "summary"}}},
		{Role: RoleUser, IsTruncationMarker: true, TruncationID: "t1", Content: []ContentBlock{{Type: BlockText, Text: "marker"}}},
	}
}

func TestAPIJSONRoundTrip(t *testing.T) {
	for _, m := range fullAPI() {
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeAPI(data)
		if err != nil {
			t.Fatalf("DecodeAPI(%s): %v", data, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("round trip of %s:\n got %+v\nwant %+v", data, got, m)
		}
	}
	data, _ := json.Marshal(fullAPI()[1])
	for _, k := range []string{`"condenseParent":"c1"`, `"truncationParent":"t1"`, `"tool_use"`, `"signature":"sig"`} {
		if !strings.Contains(string(data), k) {
			t.Errorf("%s missing from %s", k, data)
		}
	}
	data, _ = json.Marshal(fullAPI()[2])
	for _, k := range []string{`"tool_use_id":"tu1"`, `"is_error":true`} {
		if !strings.Contains(string(data), k) {
			t.Errorf("%s missing from %s", k, data)
		}
	}
}

func TestAPIValidate(t *testing.T) {
	text := func(s string) ContentBlock { return ContentBlock{Type: BlockText, Text: s} }
	tests := []struct {
		name  string
		msg   APIMessage
		field string
	}{
		{"valid text", APIMessage{Role: RoleUser, Content: []ContentBlock{text("hi")}}, ""},
		{"missing role", APIMessage{Content: []ContentBlock{text("hi")}}, "role"},
		{"unknown role", APIMessage{Role: "system", Content: []ContentBlock{text("hi")}}, "role"},
		{"negative ts", APIMessage{Role: RoleUser, TS: -1, Content: []ContentBlock{text("hi")}}, "ts"},
		{"no content", APIMessage{Role: RoleUser}, "content"},
		{"block without type", APIMessage{Role: RoleUser, Content: []ContentBlock{text("a"), {}}}, "content[1].type"},
		{"unknown block", APIMessage{Role: RoleUser, Content: []ContentBlock{{Type: "document"}}}, "content[0].type"},
		{"text with tool id", APIMessage{Role: RoleUser, Content: []ContentBlock{{Type: BlockText, Text: "a", ToolUseID: "x"}}}, "content[0].tool_use_id"},
		{"image without source", APIMessage{Role: RoleUser, Content: []ContentBlock{{Type: BlockImage}}}, "content[0].source"},
		{"image bad source", APIMessage{Role: RoleUser, Content: []ContentBlock{{Type: BlockImage, Source: &ImageSource{Type: "file"}}}}, "content[0].source.type"},
		{"base64 without data", APIMessage{Role: RoleUser, Content: []ContentBlock{{Type: BlockImage, Source: &ImageSource{Type: "base64", MediaType: "image/png"}}}}, "content[0].source.data"},
		{"base64 without media type", APIMessage{Role: RoleUser, Content: []ContentBlock{{Type: BlockImage, Source: &ImageSource{Type: "base64", Data: "A"}}}}, "content[0].source.media_type"},
		{"url without url", APIMessage{Role: RoleUser, Content: []ContentBlock{{Type: BlockImage, Source: &ImageSource{Type: "url"}}}}, "content[0].source.url"},
		{"tool_use by user", APIMessage{Role: RoleUser, Content: []ContentBlock{{Type: BlockToolUse, ID: "a", Name: "n"}}}, "content[0].type"},
		{"tool_use without id", APIMessage{Role: RoleAssistant, Content: []ContentBlock{{Type: BlockToolUse, Name: "n"}}}, "content[0].id"},
		{"tool_use without name", APIMessage{Role: RoleAssistant, Content: []ContentBlock{{Type: BlockToolUse, ID: "a"}}}, "content[0].name"},
		{"tool_use input not object", APIMessage{Role: RoleAssistant, Content: []ContentBlock{{Type: BlockToolUse, ID: "a", Name: "n", Input: json.RawMessage(`[1]`)}}}, "content[0].input"},
		{"tool_use with text", APIMessage{Role: RoleAssistant, Content: []ContentBlock{{Type: BlockToolUse, ID: "a", Name: "n", Text: "x"}}}, "content[0].text"},
		{"tool_result by assistant", APIMessage{Role: RoleAssistant, Content: []ContentBlock{{Type: BlockToolResult, ToolUseID: "a"}}}, "content[0].type"},
		{"tool_result without id", APIMessage{Role: RoleUser, Content: []ContentBlock{{Type: BlockToolResult}}}, "content[0].tool_use_id"},
		{"tool_result nested tool_use", APIMessage{Role: RoleUser, Content: []ContentBlock{{Type: BlockToolResult, ToolUseID: "a", Content: []ContentBlock{{Type: BlockToolUse, ID: "b", Name: "n"}}}}}, "content[0].content[0].type"},
		{"tool_result nested bad text", APIMessage{Role: RoleUser, Content: []ContentBlock{{Type: BlockToolResult, ToolUseID: "a", Content: []ContentBlock{{Type: BlockText, Name: "n"}}}}}, "content[0].content[0].name"},
		{"thinking by user", APIMessage{Role: RoleUser, Content: []ContentBlock{{Type: BlockThinking, Thinking: "t"}}}, "content[0].type"},
		{"summary without id", APIMessage{Role: RoleUser, IsSummary: true, Content: []ContentBlock{text("s")}}, "condenseId"},
		{"condenseId on non-summary", APIMessage{Role: RoleUser, CondenseID: "c", Content: []ContentBlock{text("s")}}, "condenseId"},
		{"summary and marker", APIMessage{Role: RoleUser, IsSummary: true, CondenseID: "c", IsTruncationMarker: true, TruncationID: "t", Content: []ContentBlock{text("s")}}, "isTruncationMarker"},
		{"marker without id", APIMessage{Role: RoleUser, IsTruncationMarker: true, Content: []ContentBlock{text("s")}}, "truncationId"},
		{"truncationId on non-marker", APIMessage{Role: RoleUser, TruncationID: "t", Content: []ContentBlock{text("s")}}, "truncationId"},
		{"summary is its own parent", APIMessage{Role: RoleUser, IsSummary: true, CondenseID: "c", CondenseParent: "c", Content: []ContentBlock{text("s")}}, "condenseParent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFieldError(t, tt.msg.Validate(), tt.field)
		})
	}
	for i, m := range fullAPI() {
		if err := m.Validate(); err != nil {
			t.Errorf("fullAPI()[%d]: %v", i, err)
		}
	}
}

func TestDecodeAPIStrict(t *testing.T) {
	bad := map[string]string{
		`{"role":"user","content":[{"type":"text","text":"a","cache_control":{}}]}`: "cache_control",
		`{"role":"user","content":"hello"}`:                                         "content",
		`{"role":"user","content":[{"type":"text","text":"a"}]}x`:                   "",
		`{"role":"user","content":[]}`:                                              "content",
	}
	for in, want := range bad {
		_, err := DecodeAPI([]byte(in))
		if err == nil {
			t.Errorf("DecodeAPI(%s): no error", in)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeAPI(%s) = %v, want it to mention %q", in, err, want)
		}
	}
}

func TestPlainText(t *testing.T) {
	got := []string{}
	for _, m := range fullAPI() {
		got = append(got, m.PlainText())
	}
	want := []string{"plot it", "running", "2", "summary", "marker"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("PlainText = %q, want %q", got, want)
	}
	if s := (APIMessage{Content: []ContentBlock{{Type: BlockText, Text: "a"}, {Type: BlockText}, {Type: BlockText, Text: "b"}}}).PlainText(); s != "a\nb" {
		t.Fatalf("PlainText = %q", s)
	}
}

func FuzzDecodeAPI(f *testing.F) {
	for _, m := range fullAPI() {
		data, _ := json.Marshal(m)
		f.Add(data)
	}
	f.Add([]byte(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":[{"type":"text"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeAPI(data)
		if err != nil {
			return
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := DecodeAPI(again)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", again, err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip differs: %+v vs %+v", m, m2)
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("decoded message does not validate: %v", err)
		}
	})
}

func FuzzDecodeUI(f *testing.F) {
	data, _ := json.Marshal(fullUI())
	f.Add(data)
	f.Add([]byte(`{"ts":1,"type":"ask","ask":"tool"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeUI(data)
		if err != nil {
			return
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := DecodeUI(again)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", again, err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip differs: %+v vs %+v", m, m2)
		}
	})
}
