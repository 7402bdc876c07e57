package rewind

import (
	"go/build"
	"strings"
	"testing"
)

// TestImportsOnlyMessages keeps rewind pure and low in the import graph: the
// standard library and messages only (see DESIGN.md).
func TestImportsOnlyMessages(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		first, _, _ := strings.Cut(imp, "/")
		if strings.Contains(first, ".") && imp != "github.com/agentkernel/agentkernel/messages" {
			t.Errorf("rewind imports %s; only the standard library and messages are allowed", imp)
		}
	}
}
