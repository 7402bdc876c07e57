package messages

import "testing"

func TestPrintable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"  two\n\nlines\r\n", "two lines"},
		{"red \x1b[31mtext\x1b[0m", "red text"},
		{"up\x1b[1A\x1b[2Kover", "upover"},
		{"title \x1b]0;pwned\x07end", "title end"},
		{"st \x1b]8;;http://x\x1b\\link", "st link"},
		{"tab\tnul\x00del\x7fc1\u0085x", "tab nul del c1 x"},
		{"rtl \u202egnp.exe", "rtl gnp.exe"},
		{"sep\u2028para\u2029end", "sep para end"},
		{"bad \xff utf8", "bad \uFFFD utf8"},
		{"lone \x1b", "lone"},
	} {
		if got := Printable(tc.in, 0); got != tc.want {
			t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := Printable("abcdef", 4); got != "abc…" {
		t.Errorf("cut: %q", got)
	}
	if got := FirstLine("\n  \x1b[1mfirst\x1b[0m line\nsecond", 80); got != "first line" {
		t.Errorf("FirstLine: %q", got)
	}
}
