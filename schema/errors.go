package schema

import (
	"cmp"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

var (
	// ErrIncomplete is matched by the error an accumulator's Result
	// returns when the response was cut off: no [DONE] marker and no final
	// chunk was seen.
	ErrIncomplete = errors.New("schema: response incomplete")

	// ErrTooManyChoices is matched by the error an accumulator returns for
	// a stream with more than 1024 distinct choices, or tool calls in one
	// choice.
	ErrTooManyChoices = errors.New("schema: too many choices or tool calls")
)

// ErrorResponse is an error payload sent by a model container: LMI's
// validation error {"error", "code"}, its dynamic-batch error {"code",
// "message", "error"}, and the OpenAI-compatible forms {"object": "error",
// "message", "type", "code"} and {"error": {"message", "type", "code"}}.
// It implements error.
type ErrorResponse struct {
	// Code is the status code the container reports (424 in LMI), or 0
	// if it sent none or a non-numeric one.
	Code int
	// Message is the short message ("invoke handler failure").
	Message string
	// Detail is the "error" field when it is a string.
	Detail string
	// Type is the error type of OpenAI-compatible servers.
	Type string
}

// Error implements the error interface.
func (e *ErrorResponse) Error() string {
	var b strings.Builder
	b.WriteString("schema: model error")
	if e.Code != 0 {
		b.WriteString(" " + strconv.Itoa(e.Code))
	}
	for _, s := range []string{e.Type, e.Message, e.Detail} {
		if s != "" {
			b.WriteString(": " + s)
		}
	}
	return b.String()
}

// UnmarshalJSON decodes any of the error forms.
func (e *ErrorResponse) UnmarshalJSON(b []byte) error {
	var w struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = ErrorResponse{Code: parseCode(w.Code), Message: w.Message, Type: w.Type}
	switch {
	case len(w.Error) > 0 && w.Error[0] == '"':
		return json.Unmarshal(w.Error, &e.Detail)
	case len(w.Error) > 0 && w.Error[0] == '{':
		var inner ErrorResponse
		if err := json.Unmarshal(w.Error, &inner); err != nil {
			return err
		}
		e.Code = cmp.Or(e.Code, inner.Code)
		e.Message = cmp.Or(e.Message, inner.Message)
		e.Type = cmp.Or(e.Type, inner.Type)
		e.Detail = inner.Detail
	}
	return nil
}

// empty reports whether the payload carried none of the error fields.
func (e *ErrorResponse) empty() bool { return *e == ErrorResponse{} }

// parseCode reads a status code sent as a number or a numeric string.
func parseCode(raw json.RawMessage) int {
	s := strings.Trim(string(raw), `"`)
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

// GenerationError reports a generation that failed after the stream
// began (so with HTTP status 200): an LMI line or response whose details
// carry finish_reason "error", or a chat or text completion choice whose
// finish_reason is "error" (see [ChatAccumulator] and
// [CompletionAccumulator]).
type GenerationError struct {
	// Details are the details of the failed line or response. For a chat
	// or text completion, only FinishReason is set ("error").
	Details Details
	// Token is the error token of a streamed line (id -1, special).
	Token Token
	// Choice is the index of the failed choice of a chat or text
	// completion; 0 for LMI.
	Choice int
}

// Error implements the error interface.
func (e *GenerationError) Error() string {
	return `schema: generation failed (finish_reason "error")`
}
