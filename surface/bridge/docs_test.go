package bridge

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestReadmeNamesEveryMagic: the %agent subcommands of the magic table
// (which the dispatch, help and completion read) are the ones the README's
// magic list names, and the reverse; each is in %agent help with what it
// does.
func TestReadmeNamesEveryMagic(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	m := regexp.MustCompile("(?s)In both: `%agent (.*?)`").FindStringSubmatch(text)
	if m == nil {
		t.Fatal("no %agent list in the README")
	}
	var documented []string
	for _, part := range strings.Split(m[1], "|") {
		if f := strings.Fields(part); len(f) > 0 && regexp.MustCompile(`^[a-z]+$`).MatchString(f[0]) {
			documented = append(documented, f[0])
		}
	}
	var known []string
	for _, m := range magicTable() {
		known = append(known, m.name)
	}
	if !slices.Equal(known, magicWords) {
		t.Errorf("completion offers %v; the table has %v", magicWords, known)
	}
	slices.Sort(documented)
	slices.Sort(known)
	if !slices.Equal(documented, known) {
		t.Errorf("README names %%agent %v; the kernel knows %v", documented, known)
	}
	help := magicHelp()
	for _, m := range magicTable() {
		if m.doc == "" || !strings.Contains(help, "%agent "+m.name) || !strings.Contains(help, m.doc[:min(len(m.doc), 20)]) {
			t.Errorf("%%agent help does not name %s with what it does", m.name)
		}
	}
}
