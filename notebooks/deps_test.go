package notebooks

import (
	"go/build"
	"strings"
	"testing"
)

// TestImports keeps notebooks low in the import graph (see DESIGN.md): of
// agentkernel's own packages it may import only kernel/client (a
// kernelspec's language), messages and store: running a notebook, with the
// wire and the notebook comm, is package runner's.
func TestImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	const mod = "github.com/agentkernel/agentkernel/"
	allowed := map[string]bool{"kernel/client": true, "messages": true, "store": true}
	for _, imp := range pkg.Imports {
		if rest, ok := strings.CutPrefix(imp, mod); ok && !allowed[rest] {
			t.Errorf("notebooks imports %s; allowed: kernel/client, messages, store", imp)
		}
	}
}
