package store

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/messages"
)

func TestSummarizeToolInput(t *testing.T) {
	long := strings.Repeat("z", 400)
	tests := []struct{ name, tool, input, want string }{
		{"file tool path only", "read_file", `{"path":"src/main.go","content":"` + long + `"}`, "src/main.go"},
		{"claude file tool", "Edit", `{"file_path":"/w/a.py","old_string":"x","new_string":"y"}`, "/w/a.py"},
		{"notebook", "NotebookEdit", `{"notebook_path":"n.ipynb","new_source":"x"}`, "n.ipynb"},
		{"command with description", "Bash", `{"command":"make test\nmake lint","description":"Run tests"}`, "Run tests\nmake test"},
		{"command only", "execute_command", `{"command":"  ls -la\necho"}`, "ls -la"},
		{"search", "Grep", `{"pattern":"TODO","path":"src"}`, "TODO src"},
		{"other tool", "ask_followup_question", `{"question":"Which?","options":[1,2]}`, `options: [1,2], question: Which?`},
		{"other tool cut", "mystery", `{"blob":"` + long + `"}`, "blob: " + strings.Repeat("z", 293) + "…"},
		{"not an object", "mystery", `[1,2]`, "[1,2]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := SummarizeToolInput(tc.tool, json.RawMessage(tc.input))
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if n := len([]rune(got)); n > MaxToolInputChars {
				t.Fatalf("summary has %d characters", n)
			}
		})
	}
	if got := SummarizeToolOutput(strings.Repeat("o", 600)); len([]rune(got)) != MaxToolOutputChars {
		t.Fatalf("output summary has %d characters", len([]rune(got)))
	}
}

func TestPreviewFirstLast(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	id := newSession(t, s)
	if first, err := s.FirstUserMessage(ctx, id); err != nil || first != "" {
		t.Fatalf("FirstUserMessage on empty = %q, %v", first, err)
	}
	bigOut := strings.Repeat("line\n", 200)
	must(t, s.AppendUI(ctx, id,
		say(1, messages.SayText, "please list the files "+strings.Repeat("and more ", 200)),
		say(2, messages.SayAPIReqStarted, `{"cost":0.1}`),
		ask(3, messages.AskTool, `{"tool":"readFile","path":"a.txt","content":"`+strings.Repeat("q", 1000)+`"}`),
		ask(4, messages.AskCommand, "ls -la\necho done"),
		say(5, messages.SayCommandOutput, bigOut),
		say(6, messages.SayUserFeedback, "thanks"),
		say(7, messages.SayCheckpointSaved, "abc123"),
	))
	items, err := s.Preview(ctx, id, PreviewOptions{Limit: 10, MaxChars: 1000})
	must(t, err)
	var got []string
	for _, it := range items {
		got = append(got, it.Role+":"+strings.SplitN(it.Text, "\n", 2)[0])
	}
	equalJSON(t, "preview", got, []string{"user:" + cutRunes("please list the files "+strings.Repeat("and more ", 200), 1000), "tool:readFile: a.txt", "tool:ls -la", "tool:line", "user:thanks"})
	if n := len([]rune(items[3].Text)); n != MaxToolOutputChars {
		t.Fatalf("command output preview has %d characters, want %d", n, MaxToolOutputChars)
	}
	items, err = s.Preview(ctx, id, PreviewOptions{Limit: 2, MaxChars: 3})
	must(t, err)
	equalJSON(t, "limit+maxChars", items, []PreviewItem{{"tool", "li…"}, {"user", "th…"}})
	items, err = s.Preview(ctx, id, PreviewOptions{Limit: 10, MaxChars: 240, MaxBytes: 300})
	must(t, err)
	b, _ := json.Marshal(items)
	if len(b) > 300 || len(items) == 0 || items[len(items)-1].Text != "thanks" {
		t.Fatalf("byte cap: %d bytes, %+v", len(b), items)
	}
	first, err := s.FirstUserMessage(ctx, id)
	must(t, err)
	if !strings.HasPrefix(first, "please list") || len(first) < 1800 {
		t.Fatalf("FirstUserMessage = %.40q (%d bytes), want it whole", first, len(first))
	}
	last, err := s.LastMessagePreview(ctx, id, 4)
	must(t, err)
	if last != "tha…" {
		t.Fatalf("LastMessagePreview = %q", last)
	}
	// Nothing was cut in storage.
	ui, err := s.LoadUI(ctx, id, Page{})
	must(t, err)
	if ui[4].Text != bigOut {
		t.Fatal("stored output was truncated")
	}
}

func TestCapByJSONBytes(t *testing.T) {
	items := []string{"aaaa", "bb", "c"} // ["aaaa","bb","c"] = 17 bytes
	tests := []struct {
		max       int
		want      []string
		wantBytes int
	}{
		{100, items, 17},
		{17, items, 17},
		{16, []string{"bb", "c"}, 10},
		{9, []string{"c"}, 5},
		{4, []string{}, 2},
	}
	for _, tc := range tests {
		got, n := CapByJSONBytes(items, tc.max)
		if strings.Join(got, ",") != strings.Join(tc.want, ",") || n != tc.wantBytes {
			t.Errorf("CapByJSONBytes(%d) = %v, %d; want %v, %d", tc.max, got, n, tc.want, tc.wantBytes)
		}
		if b, _ := json.Marshal(got); len(got) > 0 && len(b) != n {
			t.Errorf("CapByJSONBytes(%d) reports %d bytes, JSON has %d", tc.max, n, len(b))
		}
	}
}
