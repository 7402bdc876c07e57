package notebooks

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestSaveNeverOverwritesANewerFile: a Doc's change that races another
// writer — timed into each point of the save, after the new file is
// written and synced, after the old one is moved aside, after the new one
// is in place — never leaves the other writer's file overwritten: the
// change fails with ErrChanged (the agent is told, and nothing said
// "Inserted") and the file is the other writer's. A writer that replaces
// the file (as an editor or WriteFile does) and one that writes into it
// in place (as Jupyter saves), with contents of the same size in the same
// clock tick (only the bytes differ), both. The next change reads the
// newer file and lands.
func TestSaveNeverOverwritesANewerFile(t *testing.T) {
	theirs := func() *Notebook {
		nb := New()
		nb.Cells = append(nb.Cells, &Cell{ID: "cell0001", CellType: Code, Source: "x = 2", Metadata: Metadata{}, Outputs: []*Output{}})
		return nb
	}
	// A writer is called at every step of our save and saves at step at.
	type writer func(t *testing.T, path, at string) func(step string)
	renames := func(t *testing.T, path, at string) func(string) {
		return func(step string) {
			if step != at {
				return
			}
			if err := WriteFile(path, theirs()); err != nil {
				t.Error(err)
			}
		}
	}
	inPlace := func(t *testing.T, path, at string) func(string) {
		return func(step string) {
			if step != at {
				return
			}
			b, _ := Marshal(theirs())
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Error(err)
			}
		}
	}
	// holding has the file open from the first step on, as a writer that
	// began its save before ours, and writes into it at step at.
	holding := func(t *testing.T, path, at string) func(string) {
		var f *os.File
		return func(step string) {
			if f == nil {
				var err error
				if f, err = os.OpenFile(path, os.O_WRONLY, 0); err != nil {
					t.Error(err)
				}
			}
			if step != at {
				return
			}
			b, _ := Marshal(theirs())
			if _, err := f.WriteAt(b, 0); err != nil {
				t.Error(err)
			}
			f.Truncate(int64(len(b)))
			f.Close()
		}
	}
	for _, tc := range []struct {
		name   string
		at     string // the step of our save the other writer saves at
		writer writer
		late   bool // the other writer saved after ours: theirs is the newer file, and ours succeeded
	}{
		{"replaced after the write", "written", renames, false},
		{"written in place after the write", "written", inPlace, false},
		{"replaced after the move", "moved", renames, false},
		{"created after the move", "moved", inPlace, false},
		{"written into the moved file", "moved", holding, false},
		{"written into the moved file after ours is in place", "linked", holding, false},
		{"replaced after ours is in place", "linked", renames, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "nb.ipynb")
			nb := New()
			nb.Cells = append(nb.Cells, &Cell{ID: "cell0001", CellType: Code, Source: "x = 1", Metadata: Metadata{}, Outputs: []*Output{}})
			if err := WriteFile(path, nb); err != nil {
				t.Fatal(err)
			}
			d, err := OpenFile(path)
			if err != nil {
				t.Fatal(err)
			}
			d.hook = tc.writer(t, path, tc.at)
			_, err = d.Insert(1, &Cell{CellType: Markdown, Source: "ours"})
			d.hook = nil
			switch {
			case tc.late && err != nil:
				t.Fatalf("a save after ours made ours fail: %v", err)
			case !tc.late && !errors.Is(err, ErrChanged):
				t.Fatalf("Insert = %v, want ErrChanged", err)
			}
			got, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Cells) != 1 || got.Cells[0].Source != "x = 2" {
				t.Fatalf("the file's cells: %+v; want the other writer's", got.Cells)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("files left in the directory: %v", names)
			}
			// The next change reads the newer file and lands on it.
			if _, err := d.Insert(1, &Cell{CellType: Markdown, Source: "ours"}); err != nil {
				t.Fatal(err)
			}
			if got, _ := ReadFile(path); len(got.Cells) != 2 || got.Cells[0].Source != "x = 2" || got.Cells[1].Source != "ours" {
				t.Fatalf("after the next change: %+v", got.Cells)
			}
		})
	}
}
