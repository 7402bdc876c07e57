package backing

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestNamespace: the user's variables come back quietly — a table's
// columns and shape, a function's signature, a short repr — bounded
// however many names (100,000) or columns (10,000, of a real pandas
// DataFrame when the kernel's Python has pandas) there are, and a value
// whose repr raises is still named; the summary leaves no name behind and
// moves no execution count.
func TestNamespace(t *testing.T) {
	needPython(t)
	r := NewLocal(LocalOptions{})
	defer r.Close()
	ctx := context.Background()
	setup := `class Frame:
    def __init__(self, n):
        self.columns = ['col%d' % i for i in range(n)]
        self.dtypes = ['int64'] * n
        self.shape = (100, n)
sales = Frame(3)
wide = Frame(10000)
def total(rows, tax=0.2):
    return rows
class Broken:
    def __repr__(self):
        raise RuntimeError('no repr')
broken = Broken()
big = list(range(100000))
try:
    import pandas
    frame = pandas.DataFrame({'c%d' % i: [i] for i in range(10000)})
except ImportError:
    pass
for i in range(100000):
    globals()['v%d' % i] = i
count = 42
import json as js`
	res, err := r.Execute(ctx, Exec{Code: setup})
	if err != nil || res.Error != nil {
		t.Fatalf("setup: %v %+v", err, res.Error)
	}
	vars, err := Namespace(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	// Through a Quiet (a comm, as ipykernel 6 has no subshells; twice, the
	// second on the comm the first made): the same summary.
	q := NewQuiet(r)
	for i := range 2 {
		got, err := Namespace(ctx, q)
		if err != nil || !reflect.DeepEqual(got, vars) {
			t.Fatalf("read %d through Quiet: %d names (%v), where the execute_request gave %d", i+1, len(got), err, len(vars))
		}
	}
	if !q.Beside() && q.commID == "" {
		t.Error("a kernel without subshells was read without the comm")
	}
	if len(vars) > maxNamespace {
		t.Fatalf("%d names: not bounded", len(vars))
	}
	byName := map[string]Variable{}
	for _, v := range vars {
		byName[v.Name] = v
	}
	if v := byName["sales"]; v.Shape != "(100, 3)" || !slices.Equal(v.Columns, []string{"col0: int64", "col1: int64", "col2: int64"}) {
		t.Errorf("sales: %+v", v)
	}
	if v := byName["wide"]; len(v.Columns) != 50 {
		t.Errorf("a table of 10,000 columns gave %d", len(v.Columns))
	}
	if v, ok := byName["frame"]; ok {
		if v.Type != "DataFrame" || v.Shape != "(1, 10000)" || len(v.Columns) != 50 || v.Columns[0] != "c0: int64" {
			t.Errorf("a pandas DataFrame of 10,000 columns: %+v", v)
		}
	} else {
		t.Log("the kernel's Python has no pandas: a DataFrame of its own is not tried (Debian: python3-pandas)")
	}
	if b, _ := json.Marshal(vars); len(b) > 64<<10 {
		t.Errorf("the summary of 100,000 names is %d bytes", len(b))
	}
	if v := byName["js"]; v.Type != "module" || v.Repr != "json" {
		t.Errorf("a module imported as js: %+v", v)
	}
	if v := byName["total"]; v.Signature != "total(rows, tax=0.2)" || v.Describe() != "total: function total(rows, tax=0.2)" {
		t.Errorf("total: %+v %q", v, v.Describe())
	}
	if v := byName["big"]; len(v.Repr) > 60 || !strings.HasPrefix(v.Repr, "[0, 1, 2") {
		t.Errorf("big: %q", v.Repr)
	}
	if v, ok := byName["broken"]; !ok || v.Type != "Broken" {
		t.Errorf("broken: %+v, %v", v, ok)
	}
	if v := byName["count"]; v.Describe() != "count: int = 42" && len(vars)-1 < maxVariables { // js is a module
		t.Errorf("count: %q", v.Describe())
	}
	// Nothing left behind: no new name, and the next cell's count is the
	// one after the setup's.
	res, err = r.Execute(ctx, Exec{Code: "sorted(k for k in globals() if k in ('ns', 'out', 'r', 'g', 'ip', 'codes', 'target'))"})
	if err != nil || strings.TrimSpace(res.Text) != "[]" {
		t.Errorf("names left behind: %q %v", res.Text, err)
	}
	var counts []int
	res, err = r.Execute(ctx, Exec{Code: "1", Output: func(o Output) {
		var c struct {
			N int `json:"execution_count"`
		}
		if o.Type == "execute_input" && json.Unmarshal(o.Content, &c) == nil {
			counts = append(counts, c.N)
		}
	}})
	if err != nil || len(counts) != 1 || counts[0] != 3 {
		t.Errorf("execution counts %v (want the third cell: 3), %v", counts, err)
	}
}
