package bidi

import "strconv"

// The six error shapes the service models. Their fields are hand-written
// here; their smithy.APIError methods (Error, ErrorCode, ErrorMessage,
// ErrorFault) and, unless written below, their format method are
// generated from one table into modeled_gen.go.
//
//go:generate go run ./internal/modeledgen -o modeled_gen.go

// ModelStreamError is the modeled mid-stream error the service sends when
// the model container's stream fails, for example because the container
// closed its WebSocket. The stream ends with it.
type ModelStreamError struct {
	Message string
	// ErrorCode_ is the modeled ErrorCode member (for example
	// "ModelInvocationTimeExceeded"). It carries a trailing underscore
	// because ErrorCode is the [smithy.APIError] method.
	ErrorCode_ string
}

// InternalStreamFailure is the modeled mid-stream error the service sends
// when the stream fails on its side. The stream ends with it.
type InternalStreamFailure struct {
	Message string
}

// ModelError is the modeled HTTP 424 error: the model container could not
// be reached or failed, for example "Failed to establish WebSocket
// connection". OriginalMessage comes from the container and may echo
// request content, so Error() leaves it (and LogStreamArn) out; read the
// fields directly.
type ModelError struct {
	Message string
	// OriginalStatusCode is the HTTP status the model container answered
	// with (not the service's 424), when it answered.
	OriginalStatusCode int
	// OriginalMessage is the container's own message; it may echo
	// request content.
	OriginalMessage string
	// LogStreamArn names the CloudWatch log stream of the container.
	LogStreamArn string
	// ErrorCode_ is the modeled ErrorCode member; see [ModelStreamError].
	ErrorCode_ string
}

func (e *ModelError) format(status int) string {
	var extra string
	if e.OriginalStatusCode != 0 {
		extra = "original status " + strconv.Itoa(e.OriginalStatusCode)
	}
	return formatAPIError(codeModelError, status, e.Message, e.ErrorCode_, extra)
}

// InputValidationError is the modeled HTTP 400 error for input the service
// rejects. The client returns it too, before any I/O, for input that fails
// the model's constraints; then Field names the offending OpenInput field
// (for example "EndpointName") and ErrorCode_ is empty.
type InputValidationError struct {
	Message string
	// ErrorCode_ is the modeled ErrorCode member; see [ModelStreamError].
	ErrorCode_ string
	// Field is set only for client-side validation failures.
	Field string
}

func (e *InputValidationError) format(status int) string {
	if e.Field != "" {
		return "bidi: InputValidationError: " + e.Field + ": " + cleanText(e.Message)
	}
	return formatAPIError(codeInputValidationError, status, e.Message, e.ErrorCode_, "")
}

// InternalServerError is the modeled HTTP 500 error.
type InternalServerError struct {
	Message string
	// ErrorCode_ is the modeled ErrorCode member; see [ModelStreamError].
	ErrorCode_ string
}

// ServiceUnavailableError is the modeled HTTP 503 error. Opening a session
// is retried on it (see Options.RetryMaxAttempts).
type ServiceUnavailableError struct {
	Message string
	// ErrorCode_ is the modeled ErrorCode member; see [ModelStreamError].
	ErrorCode_ string
}
