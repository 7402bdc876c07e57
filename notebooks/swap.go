package notebooks

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// fileState is a notebook file as a Doc last read or wrote it: which file
// it is (device and inode), its size and modification time, and a digest
// of its bytes.
type fileState struct {
	info os.FileInfo
	sum  [sha256.Size]byte
	// racy: modified within racyWindow of the moment it was seen. A
	// write in the same tick of the file system's clock can leave size
	// and time as they were, so its bytes are compared too (as git does).
	racy bool
}

// racyWindow is how close to the moment a file is seen its modification
// may be for a later write to leave its stat unchanged: file times come
// from a coarse clock (a scheduler tick) and, on a network file system,
// from another machine's.
const racyWindow = 2 * time.Second

func stateOf(info os.FileInfo, data []byte, seen time.Time) fileState {
	return fileState{info: info, sum: sha256.Sum256(data), racy: !info.ModTime().Before(seen.Add(-racyWindow))}
}

// same reports whether the file at path is still the one s describes.
func (s fileState) same(path string) (bool, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	if s.info == nil || !os.SameFile(s.info, fi) || fi.Size() != s.info.Size() || !fi.ModTime().Equal(s.info.ModTime()) {
		return false, nil
	}
	if !s.racy {
		return true, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	return sha256.Sum256(b) == s.sum, nil
}

// swap puts tmp, written and synced, at d.path if d.path is still the file
// d read (d.seen); a file that changed since is never written over, and
// nothing another writer saved is lost. It moves d.path aside, checks
// what it moved, links tmp in its place — which fails if a file came to
// the path meanwhile — and checks the moved file again, for a writer that
// wrote into it in the meantime (Jupyter saves in place): that file goes
// back. A lost race is ErrChanged. tmp is gone afterwards either way.
func (d *Doc) swap(tmp string) error {
	defer os.Remove(tmp)
	aside := tmp + ".old"
	d.step("written")
	if err := os.Rename(d.path, aside); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("notebooks: %s: %w (it was removed)", d.path, ErrChanged)
		}
		return fmt.Errorf("notebooks: write %s: %w", d.path, err)
	}
	d.step("moved")
	if ok, err := d.seen.same(aside); !ok {
		return d.putBack(aside, err)
	}
	if err := place(tmp, d.path); err != nil {
		if errors.Is(err, fs.ErrExist) { // another writer's file came: it stays
			if ok, _ := d.seen.same(aside); ok {
				os.Remove(aside) // the file as d read it
				return changedErr(d.path, nil)
			}
			return d.putBack(aside, nil)
		}
		if perr := place(aside, d.path); perr != nil {
			return fmt.Errorf("notebooks: write %s: %w; the file as it was is %s", d.path, err, aside)
		}
		return fmt.Errorf("notebooks: write %s: %w", d.path, err)
	}
	d.step("linked")
	if ok, err := d.seen.same(aside); !ok {
		// Written to in place meanwhile: that is the newer file.
		if rerr := os.Rename(aside, d.path); rerr != nil {
			return fmt.Errorf("notebooks: %s: %w; the other writer's file is %s (%v)", d.path, ErrChanged, aside, rerr)
		}
		return changedErr(d.path, err)
	}
	os.Remove(aside)
	return nil
}

// putBack returns the file moved aside to d.path, unless another file is
// there by now: then both are newer than what d read, and the one moved
// aside keeps its name, which the error says. The error is ErrChanged.
func (d *Doc) putBack(aside string, cause error) error {
	if err := place(aside, d.path); err != nil {
		return fmt.Errorf("notebooks: %s: %w; an earlier save of it is %s", d.path, ErrChanged, aside)
	}
	return changedErr(d.path, cause)
}

func changedErr(path string, cause error) error {
	if cause != nil {
		return fmt.Errorf("notebooks: %s: %w (%v)", path, ErrChanged, cause)
	}
	return fmt.Errorf("notebooks: %s: %w", path, ErrChanged)
}

// place gives the file from the name to, which must not exist (an error
// wrapping fs.ErrExist if it does), and removes the name from: a hard
// link, which fails on an existing name, then the old name's removal. On a
// file system without hard links it renames when to is not there.
func place(from, to string) error {
	err := os.Link(from, to)
	switch {
	case err == nil:
		os.Remove(from)
		return nil
	case errors.Is(err, fs.ErrExist):
		return err
	}
	if _, serr := os.Lstat(to); serr == nil {
		return fmt.Errorf("%s: %w", to, fs.ErrExist)
	}
	return os.Rename(from, to)
}

// step calls the test hook at a point of swap.
func (d *Doc) step(name string) {
	if d.hook != nil {
		d.hook(name)
	}
}

// readState reads the file at path and what is known of it.
func readState(path string) (*Notebook, fileState, error) {
	seen := time.Now()
	f, err := os.Open(path)
	if err != nil {
		return nil, fileState{}, fmt.Errorf("notebooks: read: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fileState{}, fmt.Errorf("notebooks: read %s: %w", path, err)
	}
	b, err := readAll(f)
	if err != nil {
		return nil, fileState{}, fmt.Errorf("notebooks: read %s: %w", path, err)
	}
	nb, err := parse(b)
	if err != nil {
		return nil, fileState{}, fmt.Errorf("notebooks: read %s: %w", path, err)
	}
	return nb, stateOf(fi, b, seen), nil
}
