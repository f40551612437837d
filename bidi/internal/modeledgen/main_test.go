package main

import (
	"bytes"
	"os"
	"testing"
)

// TestGeneratedUpToDate: bidi/modeled_gen.go is what the table generates
// (run go generate ./bidi after changing the table).
func TestGeneratedUpToDate(t *testing.T) {
	have, err := os.ReadFile("../../modeled_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, generate()) {
		t.Fatal("bidi/modeled_gen.go is stale: run go generate ./bidi")
	}
}
