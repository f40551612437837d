package inspect

import (
	"testing"
	"unsafe"
)

// The documented cost of a message is its real size.
func TestMessageSize(t *testing.T) {
	if n := unsafe.Sizeof(message{}); n != MessageBytes {
		t.Fatalf("message is %d bytes, MessageBytes says %d", n, MessageBytes)
	}
}
