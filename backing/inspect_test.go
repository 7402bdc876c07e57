package backing

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestInspect: a variable is described quietly — a pandas DataFrame's
// shape, dtypes, nulls, head and describe(), a function's signature and
// docstring, a list's length and a sample — an unknown name is
// ErrNoVariable, an expression is refused unevaluated, and nothing is left
// behind: no name, no execution count.
func TestInspect(t *testing.T) {
	needPython(t)
	r := NewLocal(LocalOptions{})
	defer r.Close()
	ctx := context.Background()
	setup := `import pandas as pd
df = pd.DataFrame({'city': ['Oslo', 'Lima', None], 'sales': [1.5, None, 3.0]})
def total(rows, tax=0.2):
    """Sum the rows, with tax."""
    return rows
items = list(range(1000))`
	if res, err := r.Execute(ctx, Exec{Code: setup}); err != nil || res.Error != nil {
		t.Skipf("setup (pandas): %v %+v", err, res.Error)
	}
	q := NewQuiet(r)
	for name, wants := range map[string][]string{
		"df":       {"df: pandas.core.frame.DataFrame", "shape: (3, 2)", "city: object, 1 null", "sales: float64, 1 null", "head:", "Oslo", "describe:"},
		"df.sales": {"df.sales: pandas.core.series.Series", "dtype: float64, length: 3, nulls: 1"},
		"total":    {"signature:\ntotal(rows, tax=0.2)", "Sum the rows, with tax."},
		"items":    {"length: 1000", "[0, 1, 2,"},
	} {
		got, err := Inspect(ctx, q, name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, w := range wants {
			if !strings.Contains(got, w) {
				t.Errorf("%s: no %q in\n%s", name, w, got)
			}
		}
		if len(got) > maxInspect+100 {
			t.Errorf("%s: %d characters", name, len(got))
		}
	}
	if _, err := Inspect(ctx, q, "nothing_here"); !errors.Is(err, ErrNoVariable) {
		t.Errorf("an unknown name: %v", err)
	}
	if _, err := Inspect(ctx, q, "__import__('os').getpid()"); err == nil || !strings.Contains(err.Error(), "not a variable name") {
		t.Errorf("an expression: %v", err)
	}
	res, err := r.Execute(ctx, Exec{Code: "sorted(k for k in globals() if k in ('ns', 'path', 'r', 'g', 'res', 'd'))"})
	if err != nil || strings.TrimSpace(res.Text) != "[]" {
		t.Errorf("names left behind: %q %v", res.Text, err)
	}
}

// TestQuietAnswersBesideARunningCell: on a kernel with subshells
// (ipykernel 7, the PyPI stack's, named by AGENTKERNEL_MODERN_PYTHON), a
// variable is inspected while a long cell runs on the main shell; on one
// without (Debian's ipykernel 6.17) the read waits for the cell, and a
// bounded read ends with its ctx.
func TestQuietAnswersBesideARunningCell(t *testing.T) {
	needPython(t)
	cases := []struct {
		name, python string
		beside       bool
	}{{"ipykernel 6.17", "", false}}
	if py := os.Getenv("AGENTKERNEL_MODERN_PYTHON"); py != "" {
		cases = append(cases, struct {
			name, python string
			beside       bool
		}{"ipykernel 7", py, true})
	} else {
		t.Log("AGENTKERNEL_MODERN_PYTHON is not set: the ipykernel 7 case is not run (make test-go sets it)")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := LocalOptions{}
			if c.python != "" {
				dir := t.TempDir()
				spec := filepath.Join(dir, "kernels", "modern")
				if err := os.MkdirAll(spec, 0o755); err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(map[string]any{"argv": []string{c.python, "-m", "ipykernel_launcher", "-f", "{connection_file}"},
					"display_name": "Python 3 (PyPI)", "language": "python"})
				if err := os.WriteFile(filepath.Join(spec, "kernel.json"), b, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Setenv("JUPYTER_PATH", dir)
				opts.Kernel = "modern"
			}
			r := NewLocal(opts)
			defer r.Close()
			ctx := context.Background()
			if _, err := r.Execute(ctx, Exec{Code: "answer = 42"}); err != nil {
				t.Fatal(err)
			}
			q := NewQuiet(r)
			if q.Beside() != c.beside {
				t.Fatalf("subshells: %v, want %v", q.Beside(), c.beside)
			}
			long := make(chan error, 1)
			cellCtx, stop := context.WithCancel(ctx)
			defer stop()
			go func() {
				_, err := r.Execute(cellCtx, Exec{Code: "import time; time.sleep(20)"})
				long <- err
			}()
			time.Sleep(300 * time.Millisecond) // the cell is running
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			started := time.Now()
			got, err := Inspect(rctx, q, "answer")
			cancel()
			took := time.Since(started)
			select {
			case <-long:
				t.Fatal("the long cell ended early")
			default:
			}
			if c.beside {
				if err != nil || !strings.Contains(got, "42") {
					t.Fatalf("beside the running cell: %q %v", got, err)
				}
				t.Logf("answered through a subshell in %s while the cell ran", took)
			} else if err == nil {
				t.Fatalf("a kernel without subshells answered while the cell ran: %q", got)
			}
			stop() // interrupts the cell
			<-long
		})
	}
}

// BenchmarkNamespace200 reads a namespace of 200 variables (numbers,
// lists, functions, pandas tables) the way the context block of a prompt
// does: the kernel's side and the round trip, per read.
func BenchmarkNamespace200(b *testing.B) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		b.Skip("no python3")
	}
	r := NewLocal(LocalOptions{})
	defer r.Close()
	ctx := context.Background()
	setup := `import pandas as pd
for i in range(150):
    globals()['n%d' % i] = i
for i in range(30):
    globals()['l%d' % i] = list(range(i * 10))
for i in range(10):
    exec('def f%d(x, y=%d):\n    return x + y' % (i, i))
for i in range(10):
    globals()['t%d' % i] = pd.DataFrame({'a%d' % j: range(100) for j in range(12)})`
	if res, err := r.Execute(ctx, Exec{Code: setup}); err != nil || res.Error != nil {
		b.Skipf("setup: %v %+v", err, res.Error)
	}
	q := NewQuiet(r)
	vars, err := Namespace(ctx, q)
	if err != nil || len(vars) < 200 {
		b.Fatalf("%d variables, %v", len(vars), err)
	}
	// Quiet: the comm where the kernel has no subshells; r: the silent
	// execute_request, as before the comm.
	for _, c := range []struct {
		name string
		r    Runner
	}{{"quiet", q}, {"execute", r}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Namespace(ctx, c.r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
