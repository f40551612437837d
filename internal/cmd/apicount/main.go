// Command apicount counts the exported identifiers of Go packages, as
// issue 18 measures a package's surface: exported types, functions,
// methods on exported types, constants and variables, over the non-test
// files of each directory given.
//
//	go run ./internal/cmd/apicount ./bidi ./bidi/biditest
//
// With -list, it prints each identifier on its own line (kind, then the
// name; a method as Type.Method) before the package's count.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
)

// counts is one package's exported identifiers by kind.
type counts struct{ types, funcs, methods, consts, vars int }

func (c counts) total() int { return c.types + c.funcs + c.methods + c.consts + c.vars }

func main() {
	list := flag.Bool("list", false, "print every exported identifier")
	flag.Usage = func() { fmt.Fprintln(os.Stderr, "usage: apicount [-list] DIR...") }
	flag.Parse()
	if flag.NArg() < 1 {
		flag.Usage()
		os.Exit(2)
	}
	for _, dir := range flag.Args() {
		var each func(kind, name string)
		if *list {
			each = func(kind, name string) { fmt.Printf("%s\t%s\n", kind, name) }
		}
		c, err := count(dir, each)
		if err != nil {
			fmt.Fprintln(os.Stderr, "apicount:", err)
			os.Exit(1)
		}
		fmt.Printf("%s: %d exported (types %d, funcs %d, methods %d, consts %d, vars %d)\n",
			dir, c.total(), c.types, c.funcs, c.methods, c.consts, c.vars)
	}
}

// count parses the non-test Go files of dir and counts their exports,
// calling each (if not nil) with every one.
func count(dir string, each func(kind, name string)) (counts, error) {
	var c counts
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return c, err
	}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return c, err
		}
		countFile(f, &c, each)
	}
	return c, nil
}

// countFile adds f's exports to c, calling each (if not nil) with the
// kind and name of every one.
func countFile(f *ast.File, c *counts, each func(kind, name string)) {
	if each == nil {
		each = func(string, string) {}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				c.funcs++
				each("func", d.Name.Name)
			} else if recv := receiverType(d.Recv.List[0].Type); ast.IsExported(recv) {
				c.methods++
				each("method", recv+"."+d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						c.types++
						each("type", s.Name.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if !n.IsExported() {
							continue
						}
						if d.Tok == token.CONST {
							c.consts++
							each("const", n.Name)
						} else {
							c.vars++
							each("var", n.Name)
						}
					}
				}
			}
		}
	}
}

// receiverType returns the name of a method's receiver type.
func receiverType(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}
