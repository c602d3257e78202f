package backendtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// contractDocs returns every doc comment of the contract's packages —
// grove (the nouns), backend (the driver contract), backendtest (the
// harness's) and workspace (what the suite drives through) — with runs of white space
// folded to single spaces.
func contractDocs(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, dir := range []string{filepath.Join("..", ".."), "..", ".", filepath.Join("..", "..", "workspace")} {
		docsOf(t, dir, &b)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

func docsOf(t *testing.T, dir string, b *strings.Builder) {
	t.Helper()
	fset := token.NewFileSet()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range ents {
		if !strings.HasSuffix(ent.Name(), ".go") || strings.HasSuffix(ent.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, ent.Name()), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, cg := range f.Comments {
			if !isDoc(f, cg) {
				continue
			}
			b.WriteString(cg.Text())
			b.WriteByte(' ')
		}
	}
}

// isDoc reports whether cg documents a declaration of f (the package, a
// type, a function, a method, a field, a constant): a comment inside a
// function body is not contract.
func isDoc(f *ast.File, cg *ast.CommentGroup) bool {
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Body != nil && cg.Pos() > fn.Body.Lbrace && cg.End() < fn.Body.Rbrace {
			return false
		}
	}
	return true
}

// Every clause a case quotes is text of the contract's docs (backend,
// mostly; backendtest's Harness; workspace for what its layer promises):
// the suite and the contract cannot drift apart.
func TestEveryQuotedClauseIsInTheContract(t *testing.T) {
	docs := contractDocs(t)
	clauses := map[string]string{} // clause -> where it is quoted
	for _, c := range allCases() {
		clauses[c.clause] = "case " + c.name
	}
	for clause, where := range innerClauses(t) {
		clauses[clause] = where
	}
	for clause, where := range clauses {
		clause = strings.Join(strings.Fields(clause), " ")
		if !strings.Contains(docs, clause) {
			t.Errorf("%s quotes a clause the contract's docs do not hold:\n\t%s", where, clause)
		}
	}
}

// innerClauses returns the clauses cases quote for one of their checks
// (the first argument of e.as), by where they are quoted.
func innerClauses(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	files, err := filepath.Glob("cases_*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "as" || len(call.Args) != 2 {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				t.Errorf("%s: e.as takes a string literal, so that this test can read it", fset.Position(call.Pos()))
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatal(err)
			}
			out[s] = fset.Position(call.Pos()).String()
			return true
		})
	}
	return out
}

// Every case names the method whose contract it checks.
func TestEveryCaseNamesItsMethod(t *testing.T) {
	for _, c := range allCases() {
		if methodOf("TestConformance/"+c.name) == "the backend contract" {
			t.Errorf("case %s names no method: add a rule to methodRules", c.name)
		}
	}
}
