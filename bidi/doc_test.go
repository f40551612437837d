package bidi_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocLinksExported: the doc comments of the package's exported
// identifiers link only to exported names (a [link] to an unexported one
// is dead for every reader of go doc) and name no source file.
func TestDocLinksExported(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var parsed []*ast.File
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
	}
	pkg, err := doc.NewFromFiles(fset, parsed, "github.com/sagemaker-bidi/sagemaker-bidi/bidi")
	if err != nil {
		t.Fatal(err)
	}
	// The package's unexported top-level names: a [name] link to one is
	// dead for every reader of go doc.
	unexported := map[string]bool{}
	for _, f := range parsed {
		for name := range f.Scope.Objects {
			if !ast.IsExported(name) {
				unexported[name] = true
			}
		}
	}
	link := regexp.MustCompile(`\[\*?([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z0-9_]+))?\]`)
	file := regexp.MustCompile(`\([a-z_]+\.go\)`)
	check := func(name, text string) {
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			if (m[2] == "" && unexported[m[1]]) || (m[2] != "" && ast.IsExported(m[1]) && !ast.IsExported(m[2])) {
				t.Errorf("doc of %s links to the unexported %s", name, m[0])
			}
		}
		if m := file.FindString(text); m != "" {
			t.Errorf("doc of %s points at the source file %s", name, m)
		}
	}
	check("package", pkg.Doc)
	for _, ty := range pkg.Types {
		check(ty.Name, ty.Doc)
		for _, f := range append(ty.Funcs, ty.Methods...) {
			check(ty.Name+"."+f.Name, f.Doc)
		}
	}
	for _, f := range pkg.Funcs {
		check(f.Name, f.Doc)
	}
}
