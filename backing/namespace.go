package backing

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Variable is one name of the user's namespace in a kernel, as a completer
// or an agent reads it: what it is, and of a table its columns, of a
// function its signature.
type Variable struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Repr is a short repr (reprlib's); empty for functions and tables.
	Repr string `json:"repr,omitempty"`
	// Shape is an array's or a table's shape: "(100, 3)".
	Shape string `json:"shape,omitempty"`
	// Columns are a table's (a pandas or polars DataFrame's) columns with
	// their types, "name: dtype", at most 50.
	Columns []string `json:"columns,omitempty"`
	// Signature is a function's or class's: "f(x, y=1)".
	Signature string `json:"signature,omitempty"`
}

// maxVariables and maxModules bound how many names Namespace returns.
const (
	maxVariables = 300
	maxModules   = 50
	maxNamespace = maxVariables + maxModules
)

// namespaceProgram summarises the user's names (g, their globals) into r:
// base64-encoded JSON, whatever it meets cut (reprlib, 50 columns, 300
// names, then at most 50 modules, type "module" and their import name as
// Repr); a name whose summary raises is given by its type alone. A table
// is told by its class's (or its own) columns and dtypes, looked up
// without reading them: pandas builds a Series for each read of dtypes.
const namespaceProgram = `import json, base64, inspect, reprlib, itertools
out = []
mods = []
for k, o in list(g.items()):
    if k.startswith('_') or k in ('In', 'Out', 'exit', 'quit', 'get_ipython', 'open'):
        continue
    if inspect.ismodule(o):
        if len(mods) < 50:
            mods.append({'name': k, 'type': 'module', 'repr': getattr(o, '__name__', k)})
        continue
    if len(out) >= 300:
        continue
    d = {'name': k, 'type': type(o).__name__}
    try:
        if inspect.isfunction(o) or inspect.isclass(o):
            try:
                d['signature'] = k + str(inspect.signature(o))
            except (TypeError, ValueError):
                pass
        elif all(hasattr(type(o), a) or a in getattr(o, '__dict__', ()) for a in ('columns', 'dtypes')):
            d['columns'] = [str(c) + ': ' + str(t) for c, t in itertools.islice(zip(o.columns, o.dtypes), 50)]
            d['shape'] = str(tuple(o.shape))
        else:
            s = getattr(o, 'shape', None)
            if isinstance(s, tuple):
                d['shape'] = str(s)
            d['repr'] = reprlib.repr(o)
    except Exception:
        pass
    out.append(d)
r = base64.b64encode(json.dumps(out + mods).encode()).decode()
`

// namespaceExpr runs namespaceProgram as a user expression of a silent
// request: in a namespace of its own (the user's gains no name), leaving
// nothing behind (no execution count, no history, no Out entry).
var namespaceExpr = programExpr(namespaceProgram, "{'g': globals()}")

// Namespace asks the kernel r runs (a Python kernel) for the user's
// variables, quietly: a silent execute_request whose user expression
// computes the summary, so that nothing shows in any cell and the
// kernel's history and execution count are untouched. At most 300 names.
func Namespace(ctx context.Context, r Runner) ([]Variable, error) {
	if err := python(ctx, r); err != nil {
		return nil, fmt.Errorf("backing: namespace: %w", err)
	}
	b, err := quietValue(ctx, r, namespaceExpr)
	if err != nil {
		return nil, fmt.Errorf("backing: namespace: %w", err)
	}
	var vars []Variable
	if err := json.Unmarshal(b, &vars); err != nil {
		return nil, fmt.Errorf("backing: namespace: the kernel's answer: %w", err)
	}
	if len(vars) > maxNamespace {
		vars = vars[:maxNamespace]
	}
	return vars, nil
}

// Describe is the variable on one line: "df: DataFrame (100, 3) [a: int64,
// b: object]", "f: function f(x, y=1)", "n: int = 42".
func (v Variable) Describe() string {
	s := v.Name + ": " + v.Type
	if v.Shape != "" {
		s += " " + v.Shape
	}
	if len(v.Columns) > 0 {
		s += " [" + strings.Join(v.Columns, ", ") + "]"
	}
	if v.Signature != "" {
		s += " " + v.Signature
	}
	if v.Repr != "" {
		s += " = " + v.Repr
	}
	return s
}
