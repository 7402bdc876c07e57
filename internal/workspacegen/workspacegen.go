// Package workspacegen writes a workspace like a data scientist's, for the
// checkpoint benchmarks: a large CSV, a few binaries and many small source
// files in nested directories. The content is deterministic, so two runs
// measure the same bytes.
package workspacegen

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// Spec says what to write.
type Spec struct {
	CSVBytes    int64 // one data/measurements.csv of about this size
	Binaries    int   // models/model-N.bin
	BinaryBytes int64 // each
	SmallFiles  int   // src/pkgNN/module_N.py, 1–4 KiB each, 50 per directory
}

// DataScience is the workspace of the issue that measured the cost: a
// 500 MB CSV, four 20 MB binaries and 2,000 small source files (588 MB).
var DataScience = Spec{CSVBytes: 500 << 20, Binaries: 4, BinaryBytes: 20 << 20, SmallFiles: 2000}

// Write creates the workspace under dir.
func Write(dir string, s Spec) error {
	rng := rand.New(rand.NewPCG(1, 2))
	if s.CSVBytes > 0 {
		if err := writeCSV(filepath.Join(dir, "data", "measurements.csv"), s.CSVBytes, rng); err != nil {
			return err
		}
	}
	for i := range s.Binaries {
		if err := writeBinary(filepath.Join(dir, "models", fmt.Sprintf("model-%d.bin", i)), s.BinaryBytes, rng); err != nil {
			return err
		}
	}
	for i := range s.SmallFiles {
		p := filepath.Join(dir, "src", fmt.Sprintf("pkg%02d", i/50), fmt.Sprintf("module_%d.py", i))
		n := 1024 + rng.IntN(3072)
		b := make([]byte, 0, n+64)
		for len(b) < n {
			b = fmt.Appendf(b, "def f%d(x):\n    return x * %d\n\n", len(b), rng.IntN(1000))
		}
		if err := writeFile(p, b); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
}

func create(p string) (*os.File, *bufio.Writer, error) {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, nil, err
	}
	f, err := os.Create(p)
	if err != nil {
		return nil, nil, err
	}
	return f, bufio.NewWriterSize(f, 1<<20), nil
}

func finish(f *os.File, w *bufio.Writer) error {
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeCSV(p string, size int64, rng *rand.Rand) error {
	f, w, err := create(p)
	if err != nil {
		return err
	}
	n, _ := w.WriteString("id,sensor,time,value,quality\n")
	written := int64(n)
	var line []byte
	for i := 0; written < size; i++ {
		line = fmt.Appendf(line[:0], "%d,s%03d,%d,%.6f,%d\n", i, rng.IntN(500), 1700000000+i, rng.Float64()*1000, rng.IntN(5))
		n, err := w.Write(line)
		if err != nil {
			f.Close()
			return err
		}
		written += int64(n)
	}
	return finish(f, w)
}

func writeBinary(p string, size int64, rng *rand.Rand) error {
	f, w, err := create(p)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<16)
	for left := size; left > 0; left -= int64(len(buf)) {
		for i := 0; i < len(buf); i += 8 {
			v := rng.Uint64()
			for j := range 8 {
				buf[i+j] = byte(v >> (8 * j))
			}
		}
		if _, err := w.Write(buf[:min(int64(len(buf)), left)]); err != nil {
			f.Close()
			return err
		}
	}
	return finish(f, w)
}
