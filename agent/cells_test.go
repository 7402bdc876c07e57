package agent

import "testing"

// TestParseCell: what a cell is in each mode, and what its use takes.
func TestParseCell(t *testing.T) {
	for _, tt := range []struct {
		source string
		prompt bool
		use    CellUse
		body   string
	}{
		{"%%code\nx = 1", true, UseCode, "x = 1"},
		{"\n  %%code  \nx = 1", true, UseCode, "x = 1"},
		{"x = 1", true, UsePrompt, "x = 1"},
		{"%%agent\nwhy?", true, UsePrompt, "why?"},
		{"%agent model x", true, UseCommand, "%agent model x"},
		{"x = 1", false, UseCode, "x = 1"},
		{"%%code\nx = 1", false, UseCode, "%%code\nx = 1"},
		{"%%agent\nwhy?", false, UsePrompt, "why?"},
		{"%agent", false, UseCommand, "%agent"},
		{"%agentx = 1", false, UseCode, "%agentx = 1"},
		{"%%codex\n1", true, UsePrompt, "%%codex\n1"},
	} {
		if use, body := ParseCell(tt.source, tt.prompt); use != tt.use || body != tt.body {
			t.Errorf("ParseCell(%q, %v) = %v %q, want %v %q", tt.source, tt.prompt, use, body, tt.use, tt.body)
		}
	}
}
