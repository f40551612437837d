package framing

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSeedsSplitInvariance frames every example of the seed documents
// (schema/testdata/seeds, verbatim excerpts; see schema's seed tests),
// quirks included, whole, byte by byte and in random fragments, with and
// without Resync: the outcomes must not depend on the fragmentation. (The
// payload tests in schema check what the events are, after repairing the
// excerpts that are not JSON: placeholders, trailing commas.)
func TestSeedsSplitInvariance(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "seeds", "*"))
	if len(files) < 30 {
		t.Fatalf("%d seed files found", len(files))
	}
	for _, f := range files {
		in, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			checkSplitInvariance(t, in, 100)
			checkSplitInvariance(t, in, 100, withResync)
		})
	}
}
