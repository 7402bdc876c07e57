package bridge

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestReadmeNamesEveryMagic: the %agent subcommands the kernel knows (its
// help and completion) are the ones the README's magic list names, and the
// reverse.
func TestReadmeNamesEveryMagic(t *testing.T) {
	b, err := os.ReadFile("../README.md")
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
	known := slices.Clone(magicWords)
	slices.Sort(documented)
	slices.Sort(known)
	if !slices.Equal(documented, known) {
		t.Errorf("README names %%agent %v; the kernel knows %v", documented, known)
	}
	// Each is also in %agent help.
	for _, w := range known {
		if !strings.Contains(magicHelp, "%agent "+w) {
			t.Errorf("%%agent help does not name %s", w)
		}
	}
}
