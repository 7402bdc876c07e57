package notebooks

import (
	"go/build"
	"strings"
	"testing"
)

// TestImports keeps notebooks low in the import graph (see DESIGN.md): of
// agentkernel's own packages it may import only kernel/client, kernel/wire,
// messages, store and internal/nbcomm (the notebook comm's encoding).
func TestImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	const mod = "github.com/agentkernel/agentkernel/"
	allowed := map[string]bool{"kernel/client": true, "kernel/wire": true, "messages": true, "store": true, "internal/nbcomm": true}
	for _, imp := range pkg.Imports {
		if rest, ok := strings.CutPrefix(imp, mod); ok && !allowed[rest] {
			t.Errorf("notebooks imports %s; allowed: kernel/client, kernel/wire, messages, store, internal/nbcomm", imp)
		}
	}
}
