package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestNoMessageTypeLiterals: Jupyter message types are named by kernel/wire's
// constants everywhere else, so that a typo is a compile error. A string
// literal that is a message type is reported where it stands for one: in
// a comparison or a case, as an argument (unless it is a log line's),
// assigned or declared, returned, or an element of a composite literal.
// "error", "status" and "stream" are also ordinary words (a reply's status,
// JSON keys): they count only beside something named like a message type.
func TestNoMessageTypeLiterals(t *testing.T) {
	root := filepath.Join("..", "..")
	src, err := os.ReadFile(filepath.Join(root, "kernel", "wire", "content.go"))
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*Msg\w+\s*=\s*"(\w+)"`).FindAllStringSubmatch(string(src), -1) {
		types[m[1]] = true
	}
	if len(types) < 30 {
		t.Fatalf("found %d message types in kernel/wire/content.go: the pattern is stale", len(types))
	}
	ambiguous := map[string]bool{"error": true, "status": true, "stream": true}
	namesType := regexp.MustCompile(`(?i)msg_?type|\btyp\b|replyType`)
	fset := token.NewFileSet()
	var found []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch filepath.ToSlash(rel) {
			case "kernel/wire", "tests", ".git", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		text := func(n ast.Node) string {
			b, _ := os.ReadFile(path)
			return string(b[fset.Position(n.Pos()).Offset:fset.Position(n.End()).Offset])
		}
		report := func(lit *ast.BasicLit, near ast.Node) {
			v, err := strconv.Unquote(lit.Value)
			if err != nil || !types[v] {
				return
			}
			if ambiguous[v] && (near == nil || !namesType.MatchString(text(near))) {
				return
			}
			found = append(found, fset.Position(lit.Pos()).String()+": "+lit.Value)
		}
		var tag ast.Expr
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SwitchStmt:
				tag = n.Tag
			case *ast.CaseClause:
				for _, e := range n.List {
					if lit, ok := e.(*ast.BasicLit); ok && tag != nil {
						report(lit, tag)
					}
				}
			case *ast.BinaryExpr:
				if n.Op == token.EQL || n.Op == token.NEQ {
					if lit, ok := n.Y.(*ast.BasicLit); ok {
						report(lit, n.X)
					}
					if lit, ok := n.X.(*ast.BasicLit); ok {
						report(lit, n.Y)
					}
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
					switch sel.Sel.Name {
					case "Trace", "Debug", "Info", "Warn", "Error", "Named", "With":
						return false // a log line's words
					}
				}
				for _, a := range n.Args {
					if lit, ok := a.(*ast.BasicLit); ok {
						report(lit, nil)
					}
				}
			case *ast.KeyValueExpr:
				if k, ok := n.Key.(*ast.Ident); ok && k.Name == "MsgType" {
					if lit, ok := n.Value.(*ast.BasicLit); ok {
						report(lit, n.Key)
					}
				}
			case *ast.AssignStmt:
				for i, e := range n.Rhs {
					if lit, ok := e.(*ast.BasicLit); ok {
						var lhs ast.Node
						if i < len(n.Lhs) {
							lhs = n.Lhs[i]
						}
						report(lit, lhs)
					}
				}
			case *ast.ValueSpec:
				if n.Type != nil {
					return true // a typed constant of its own domain (nbformat's output types)
				}
				for i, e := range n.Values {
					if lit, ok := e.(*ast.BasicLit); ok && i < len(n.Names) {
						report(lit, n.Names[i])
					}
				}
			case *ast.ReturnStmt:
				for _, e := range n.Results {
					if lit, ok := e.(*ast.BasicLit); ok {
						report(lit, nil)
					}
				}
			case *ast.CompositeLit:
				for _, e := range n.Elts {
					if lit, ok := e.(*ast.BasicLit); ok {
						report(lit, nil)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("message types written as strings (use kernel/wire's Msg… constants):\n%s", strings.Join(found, "\n"))
	}
}
