package backing

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
)

// ErrNotPython is the error of Namespace and Inspect on a kernel whose
// language is not Python: they read Python's namespace.
var ErrNotPython = errors.New("not supported for this kernel: only Python kernels can be inspected")

// ErrNoVariable is Inspect's error for a name the namespace does not have.
var ErrNoVariable = errors.New("no such variable")

// maxInspect caps what Inspect returns, in characters.
const maxInspect = 8000

// inspectName is what Inspect takes: a name, or attributes of one
// (df.columns), never an expression: nothing else is evaluated.
var inspectName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// inspectProgram describes the value at path (g: the user's globals) into
// r, base64 JSON {"found", "text"}: for a pandas (or polars) DataFrame its
// shape, dtypes, nulls, head and describe(); for a Series its dtype,
// length, nulls, head and describe(); for an array its dtype, shape and a
// summary; for a container its length and a sample; for a callable its
// signature and docstring; else its type and repr. Each part is cut, the
// whole at maxInspect characters; what raises is left out.
const inspectProgram = `import json, base64, inspect, reprlib, itertools
def _cut(s, n):
    s = str(s)
    return s if len(s) <= n else s[:n] + ' [… %d more characters]' % (len(s) - n)
def _describe(path):
    parts = path.split('.')
    if parts[0] not in g:
        return None
    o = g[parts[0]]
    for p in parts[1:]:
        o = getattr(o, p)
    t = type(o)
    out = ['%s: %s.%s' % (path, t.__module__, t.__qualname__)]
    def add(label, f, n=2000):
        try:
            out.append(label + ':\n' + _cut(f(), n))
        except Exception as e:
            out.append(label + ': (%s)' % type(e).__name__)
    mod = t.__module__.split('.')[0]
    if mod == 'pandas' and hasattr(o, 'columns') and hasattr(o, 'dtypes'):
        out.append('shape: %s' % (tuple(o.shape),))
        add('columns (dtype, nulls)', lambda: '\n'.join('%s: %s, %d null' % (c, o[c].dtype, o[c].isna().sum()) for c in itertools.islice(o.columns, 100)) + ('\n[… %d more columns]' % (len(o.columns) - 100) if len(o.columns) > 100 else ''), 3000)
        add('head', lambda: o.head(5).to_string(max_cols=20, max_colwidth=40))
        add('describe', lambda: o.describe(include='all').to_string(max_cols=20, max_colwidth=30))
    elif mod == 'pandas' and hasattr(o, 'dtype') and hasattr(o, 'isna'):
        out.append('dtype: %s, length: %d, nulls: %d' % (o.dtype, len(o), o.isna().sum()))
        add('head', lambda: o.head(10).to_string())
        add('describe', lambda: o.describe().to_string())
    elif mod == 'polars' and hasattr(o, 'schema'):
        out.append('shape: %s' % (tuple(o.shape),))
        add('schema', lambda: '\n'.join('%s: %s' % kv for kv in itertools.islice(o.schema.items(), 100)))
        add('nulls', lambda: o.null_count())
        add('head', lambda: o.head(5))
    elif mod == 'numpy' and hasattr(o, 'shape') and hasattr(o, 'dtype'):
        out.append('dtype: %s, shape: %s' % (o.dtype, tuple(o.shape)))
        add('values', lambda: __import__('numpy').array2string(o, threshold=50, edgeitems=3))
        if o.dtype.kind in 'biuf' and o.size and o.size <= 10**8:
            add('min, max, mean', lambda: (o.min(), o.max(), o.mean()))
    elif isinstance(o, (list, tuple, set, frozenset, dict)):
        out.append('length: %d' % len(o))
        r = reprlib.Repr(); r.maxlist = r.maxtuple = r.maxset = r.maxfrozenset = r.maxdict = 20; r.maxstring = r.maxother = 200; r.maxlevel = 3
        add('sample', lambda: r.repr(o))
    elif inspect.ismodule(o):
        out.append('module %s, file %s' % (o.__name__, getattr(o, '__file__', None)))
        add('doc', lambda: (o.__doc__ or '').strip(), 1500)
    elif callable(o):
        add('signature', lambda: path + str(inspect.signature(o)), 500)
        add('doc', lambda: inspect.getdoc(o) or '', 1500)
        add('defined in', lambda: inspect.getsourcefile(o), 300)
    else:
        r = reprlib.Repr(); r.maxstring = r.maxother = 2000; r.maxlist = 20; r.maxlevel = 3
        add('value', lambda: r.repr(o), 2000)
        if hasattr(o, '__len__'):
            add('length', lambda: len(o), 50)
        add('attributes', lambda: ', '.join(a for a in dir(o) if not a.startswith('_'))[:1500], 1500)
    return _cut('\n'.join(out), 8000)
try:
    d = _describe(path)
    res = {'found': d is not None, 'text': d or ''}
except Exception as e:
    res = {'found': True, 'text': '%s: reading it raised %s: %s' % (path, type(e).__name__, _cut(e, 300))}
r = base64.b64encode(json.dumps(res).encode()).decode()
`

// Inspect describes the variable name (or an attribute of one: df.columns)
// of the user's namespace in the kernel r runs (a Python kernel), quietly:
// a silent execute_request whose user expression computes the description
// in a namespace of its own, so that nothing shows in any cell and the
// kernel's history and execution count are untouched. Only a name is
// taken, never an expression; reading attributes may still run a
// property's code. At most maxInspect characters.
func Inspect(ctx context.Context, r Runner, name string) (string, error) {
	if !inspectName.MatchString(name) {
		return "", fmt.Errorf("%q is not a variable name (give a name, or name.attribute: no expressions)", name)
	}
	if err := python(ctx, r); err != nil {
		return "", err
	}
	path, _ := json.Marshal(name)
	b, err := quietValue(ctx, r, programExpr(inspectProgram, "{'g': globals(), 'path': "+string(path)+"}"))
	if err != nil {
		return "", err
	}
	var res struct {
		Found bool   `json:"found"`
		Text  string `json:"text"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return "", fmt.Errorf("the kernel's answer: %w", err)
	}
	if !res.Found {
		return "", fmt.Errorf("%s: %w in the kernel", name, ErrNoVariable)
	}
	return res.Text, nil
}

// python returns ErrNotPython unless the kernel r runs is a Python one
// (or its language is not known yet).
func python(ctx context.Context, r Runner) error {
	var li struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(r.LanguageInfo(ctx), &li)
	if li.Name != "" && li.Name != "python" {
		return fmt.Errorf("%w (this one is %s)", ErrNotPython, li.Name)
	}
	return nil
}

// programExpr is a Python expression that runs program (which sets r)
// in the namespace the dict literal ns gives, and is r: what a user
// expression or the quiet comm evaluates, so that the user's namespace
// gains no name.
func programExpr(program, ns string) string {
	src, _ := json.Marshal(program) // a JSON string is a Python string literal
	return "(lambda ns: (exec(" + string(src) + ", ns), ns['r'])[1])(" + ns + ")"
}

// quietValue evaluates expr, a Python expression that gives a base64
// string, quietly, and returns the decoded bytes: through a Quiet whose
// kernel has no subshells by Quiet's comm where the kernel takes one
// (quietcomm.go: the same evaluation, for less than half the time), else
// as the user expression of a silent execute_request.
func quietValue(ctx context.Context, r Runner, expr string) ([]byte, error) {
	if q, ok := r.(*Quiet); ok && !q.Beside() {
		b, err := q.commValue(ctx, expr)
		if !errors.Is(err, errNoComm) {
			return b, err
		}
	}
	return executeValue(ctx, r, expr)
}

// executeValue evaluates expr as the user expression of a silent
// execute_request.
func executeValue(ctx context.Context, r Runner, expr string) ([]byte, error) {
	no := false
	reply, err := r.Do(ctx, client.Request{MsgType: wire.MsgExecuteRequest, Content: wire.ExecuteRequest{
		Silent: true, StoreHistory: &no, UserExpressions: map[string]string{"v": expr}}}, client.Handlers{})
	if err != nil {
		return nil, err
	}
	var rep struct {
		UserExpressions map[string]struct {
			evaluated
			Data map[string]string `json:"data"`
		} `json:"user_expressions"`
	}
	if err := json.Unmarshal(reply.Content, &rep); err != nil {
		return nil, fmt.Errorf("the kernel's reply: %w", err)
	}
	v := rep.UserExpressions["v"]
	return v.decode(v.Data["text/plain"]) // a repr: the string in quotes
}

// evaluated is how a kernel says it evaluated an expression: the fields
// a user expression's result and the quiet comm's answer share.
type evaluated struct {
	Status string `json:"status"`
	EName  string `json:"ename"`
	EValue string `json:"evalue"`
}

// evalError is an expression the kernel could not evaluate (where other
// errors are the request's).
type evalError struct{ msg string }

func (e *evalError) Error() string { return e.msg }

// decode returns the bytes that value, the expression's base64 string
// (quoted or not), holds, or the evaluation's error.
func (e evaluated) decode(value string) ([]byte, error) {
	if e.Status != "ok" {
		if e.EName != "" {
			return nil, &evalError{e.EName + ": " + e.EValue}
		}
		return nil, &evalError{"the kernel did not evaluate it"}
	}
	b, err := base64.StdEncoding.DecodeString(strings.Trim(value, `'" `))
	if err != nil {
		return nil, fmt.Errorf("the kernel's answer: %w", err)
	}
	return b, nil
}
