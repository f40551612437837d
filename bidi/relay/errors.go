package relay

import (
	"errors"
	"net/http"
	"strconv"
)

var (
	// ErrSkip, returned by a [Hook], drops the message it was given.
	ErrSkip = errors.New("relay: skip message")

	// ErrNoAuthorize is returned by [New] without an AuthorizeFunc: a
	// relay spends the application's AWS credentials, so every request
	// must be authorised by the application.
	ErrNoAuthorize = errors.New("relay: an AuthorizeFunc is required")

	// ErrOpenTimeout reports that opening the model session took longer
	// than Options.OpenTimeout. CloseFor maps it to 1013 (try again later).
	ErrOpenTimeout = errors.New("relay: opening the model session timed out")

	// ErrNoOpen is returned by [New] with neither a client nor
	// Options.Open.
	ErrNoOpen = errors.New("relay: a bidi.Client or Options.Open is required")
)

// StatusError is an error with an HTTP status, for an [AuthorizeFunc] to
// refuse a request: the client gets Status and Message (as text/plain)
// before any upgrade. Any error with an HTTPStatusCode() int method (as
// aws-sdk-go-v2's errors have) is answered with that status, and its
// text is not sent.
type StatusError struct {
	// Status is the HTTP status, 400 to 599.
	Status int
	// Message is sent to the client as the body; "" sends the status
	// text. Do not put secrets in it.
	Message string
}

// Error returns the status and message.
func (e *StatusError) Error() string {
	if e.Message == "" {
		return "relay: " + strconv.Itoa(e.Status) + " " + http.StatusText(e.Status)
	}
	return "relay: " + strconv.Itoa(e.Status) + " " + e.Message
}

// HTTPStatusCode returns Status.
func (e *StatusError) HTTPStatusCode() int { return e.Status }

// refusal returns the status and body a refused authorisation is answered
// with: the error's status (403 when it has none, or one out of range)
// and a StatusError's message, else the status text.
func refusal(err error) (int, string) {
	status := http.StatusForbidden
	var hs interface{ HTTPStatusCode() int }
	if errors.As(err, &hs) {
		if s := hs.HTTPStatusCode(); s >= 400 && s <= 599 {
			status = s
		}
	}
	var se *StatusError
	if errors.As(err, &se) && se.Message != "" && se.HTTPStatusCode() == status {
		return status, se.Message
	}
	return status, http.StatusText(status)
}
