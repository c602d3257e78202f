package backendtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// contractDocs returns every doc comment of the contract's packages —
// backend (the driver contract), backendtest (the harness's) and
// workspace (what the suite drives through) — with runs of white space
// folded to single spaces.
func contractDocs(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, dir := range []string{"..", ".", filepath.Join("..", "..", "workspace")} {
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
	for _, c := range allCases() {
		clause := strings.Join(strings.Fields(c.clause), " ")
		if !strings.Contains(docs, clause) {
			t.Errorf("case %s quotes a clause the backend docs do not hold:\n\t%s", c.name, clause)
		}
	}
}

// Every case names the method whose contract it checks.
func TestEveryCaseNamesItsMethod(t *testing.T) {
	for _, c := range allCases() {
		if methodOf("TestConformance/"+c.name) == "the backend contract" {
			t.Errorf("case %s names no method: add a rule to methodRules", c.name)
		}
	}
}
