package testexit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryPackageExitsThroughMain keeps the idle second out of every
// package of the module: each directory with tests has a TestMain that
// calls this package's Main or Exit. A package without one adds a second
// of nothing to `go test -race ./...` (fourteen of them did).
func TestEveryPackageExitsThroughMain(t *testing.T) {
	root := moduleRoot(t)
	withTests := map[string]bool{} // directory -> it has a TestMain that exits through this package
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.Dir(path)
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		withTests[dir] = withTests[dir] || exitsThroughMain(f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(withTests) < 10 {
		t.Fatalf("found tests in %d directories under %s: not the module", len(withTests), root)
	}
	for dir, ok := range withTests {
		if !ok {
			rel, _ := filepath.Rel(root, dir)
			t.Errorf("%s: no TestMain calling testexit.Main or testexit.Exit", rel)
		}
	}
}

// exitsThroughMain reports whether f declares a TestMain whose body calls
// Main or Exit of this package (qualified as testexit outside it).
func exitsThroughMain(f *ast.File) bool {
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || fn.Name.Name != "TestMain" || fn.Body == nil {
			continue
		}
		found := false
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			switch fun := call.Fun.(type) {
			case *ast.SelectorExpr:
				if x, ok := fun.X.(*ast.Ident); ok && x.Name == "testexit" && (fun.Sel.Name == "Main" || fun.Sel.Name == "Exit") {
					found = true
				}
			case *ast.Ident:
				if f.Name.Name == "testexit" && (fun.Name == "Main" || fun.Name == "Exit") {
					found = true
				}
			}
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// moduleRoot returns the module's root: this package is internal/testexit,
// and go test runs it in its directory.
func moduleRoot(t *testing.T) string {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	return root
}
