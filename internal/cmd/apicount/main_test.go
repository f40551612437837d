package main

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// TestCountFile: each kind is counted once, unexported names and methods
// on unexported types are not.
func TestCountFile(t *testing.T) {
	t.Parallel()
	src := `package p
type A struct{}
type b struct{}
type G[T any] struct{}
func F() {}
func f() {}
func (A) M() {}
func (*A) N() {}
func (A) n() {}
func (b) M() {}
func (G[T]) M() {}
const C, c = 1, 2
var V, W, v int
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var c counts
	var got []string
	countFile(f, &c, func(kind, name string) { got = append(got, kind+" "+name) })
	want := counts{types: 2, funcs: 1, methods: 3, consts: 1, vars: 2}
	if c != want || c.total() != 9 {
		t.Fatalf("counts %+v (total %d), want %+v", c, c.total(), want)
	}
	wantNames := "type A|type G|func F|method A.M|method A.N|method G.M|const C|var V|var W"
	if g := strings.Join(got, "|"); g != wantNames {
		t.Fatalf("names %q, want %q", g, wantNames)
	}
}
