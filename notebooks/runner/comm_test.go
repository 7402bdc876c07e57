package runner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/internal/nbcomm"

	"github.com/agentkernel/agentkernel/notebooks"
)

// TestReadView: a read with max_chars is answered with the cells of its
// range that fit (the first always), its start and the notebook's count;
// one without, with every cell.
func TestReadView(t *testing.T) {
	nb := &notebooks.Notebook{}
	for i := range 20 {
		nb.Cells = append(nb.Cells, &notebooks.Cell{ID: fmt.Sprintf("c%d", i), CellType: notebooks.Code, Source: strings.Repeat("x", 100)})
	}
	for _, tt := range []struct {
		name  string
		a     nbcomm.Args
		first string
		cells int
		start int
		whole bool
	}{
		{"whole", nbcomm.Args{MaxOutput: 10}, "c0", 20, 0, true},
		{"from 5", nbcomm.Args{Start: 5, MaxChars: 350}, "c5", 3, 5, false},
		{"to 6", nbcomm.Args{Start: 5, End: 6, MaxChars: 1000}, "c5", 1, 5, false},
		{"the first always", nbcomm.Args{Start: 19, MaxChars: 1}, "c19", 1, 19, false},
		{"past the end", nbcomm.Args{Start: 30, MaxChars: 1000}, "", 0, 20, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := readView("a.ipynb", nb, tt.a)
			if len(v.Cells) != tt.cells || (tt.cells > 0 && v.Cells[0].ID != tt.first) || v.Start != tt.start ||
				(v.Count == nil) != tt.whole || (!tt.whole && *v.Count != 20) {
				t.Fatalf("%+v: %d cells from %d, count %v", tt.a, len(v.Cells), v.Start, v.Count)
			}
		})
	}
}
