package messages

import (
	"go/build"
	"strings"
	"testing"
)

// TestStdlibOnly keeps messages at the bottom of the import graph: it may
// import the standard library only (see DESIGN.md).
func TestStdlibOnly(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
			t.Errorf("messages imports %s; only the standard library is allowed", imp)
		}
	}
}
