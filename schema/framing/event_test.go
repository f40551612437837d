package framing

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestEventDecode(t *testing.T) {
	var v any
	if err := (Event{Done: true}).Decode(&v); err == nil || !strings.Contains(err.Error(), "[DONE]") {
		t.Errorf("decoding [DONE]: %v", err)
	}
	err := Event{Data: json.RawMessage(`{"a":`), Offset: 10}.Decode(&v)
	var syn *SyntaxError
	if !errors.As(err, &syn) || syn.Offset != 14 {
		t.Errorf("incomplete data: %v", err)
	}
	var jsonSyn *json.SyntaxError
	if !errors.As(err, &jsonSyn) {
		t.Error("the encoding/json error is not kept")
	}
}
