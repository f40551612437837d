package chromiumtest_test

import (
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/internal/testexit"
)

// TestMain runs the tests; once they pass, a -race binary exits without
// the race detector's idle second (see package testexit).
func TestMain(m *testing.M) { testexit.Main(m) }
