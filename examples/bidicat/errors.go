package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// jsonError is the -json line of the error that ended the program, with
// the typed fields of the SDK's errors. OriginalMessage of a ModelError
// and the body of an HTTP error are left out: they may echo the request.
type jsonError struct {
	Type               string `json:"type"`
	ExitCode           int    `json:"exit_code"`
	Class              string `json:"class"`
	Error              string `json:"error"`
	Status             int    `json:"status,omitempty"`
	Code               string `json:"code,omitempty"`
	ErrorCode          string `json:"error_code,omitempty"`
	Message            string `json:"message,omitempty"`
	RequestID          string `json:"request_id,omitempty"`
	OriginalStatusCode int    `json:"original_status_code,omitempty"`
	LogStreamArn       string `json:"log_stream_arn,omitempty"`
	Field              string `json:"field,omitempty"`
	Hint               string `json:"hint,omitempty"`
}

// classify returns the exit code and the class of err.
func (c *cat) classify(err error, interrupted bool) (int, string) {
	var (
		ue  *usageError
		ive *bidi.InputValidationError
		re  *bidi.ResponseError
		le  *localError
	)
	switch {
	case interrupted:
		return exitInterrupted, "interrupted"
	case errors.As(err, &ue), errors.Is(err, bidi.ErrInvalidConfig), errors.As(err, &ive) && ive.Field != "":
		return exitUsage, "usage"
	case errors.As(err, &re):
		return exitHTTP, "http"
	case errors.Is(err, errTimeout), errors.Is(err, context.DeadlineExceeded):
		return exitFailure, "timeout"
	case errors.As(err, &le), errors.Is(err, errUndecodable):
		return exitFailure, "local"
	case !c.started.Load() && connectError(err):
		return exitConnect, "connection"
	case midStream(err), c.started.Load():
		return exitStream, "stream"
	}
	return exitFailure, "error"
}

// midStream reports the errors that can only happen once a stream runs.
func midStream(err error) bool {
	var (
		mse *bidi.ModelStreamError
		isf *bidi.InternalStreamFailure
		se  *bidi.ExceptionError
	)
	return errors.As(err, &mse) || errors.As(err, &isf) || errors.As(err, &se) || errors.Is(err, bidi.ErrSendInterrupted) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, bidi.ErrMalformedResponse) || errors.Is(err, bidi.ErrDeadPeer) ||
		errors.Is(err, bidi.ErrStreamEnded)
}

// connectError reports the errors of reaching the endpoint before any
// stream: DNS, a refused or reset dial, TLS and certificates, a peer
// that does not speak HTTP/2 (an http:// URL for a TLS port, say), and a
// stream the server refused.
func connectError(err error) bool {
	var (
		dns      *net.DNSError
		op       *net.OpError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
		record   tls.RecordHeaderError
		refused  *bidi.StreamRefusedError
	)
	return errors.Is(err, bidi.ErrNotHTTP2) || errors.As(err, &dns) || errors.As(err, &op) ||
		errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &verify) || errors.As(err, &record) || errors.As(err, &refused) ||
		strings.Contains(err.Error(), "certificate signed by unknown authority")
}

// describe fills the typed fields of err into j.
func describe(err error, j *jsonError) {
	var (
		re  *bidi.ResponseError
		me  *bidi.ModelError
		mse *bidi.ModelStreamError
		isf *bidi.InternalStreamFailure
		se  *bidi.ExceptionError
		ive *bidi.InputValidationError
	)
	if errors.As(err, &re) {
		j.Status, j.Code, j.Message, j.RequestID = re.StatusCode, re.Code, re.Message, re.RequestID
	}
	switch {
	case errors.As(err, &me):
		j.ErrorCode, j.OriginalStatusCode, j.LogStreamArn = me.ErrorCode_, me.OriginalStatusCode, me.LogStreamArn
	case errors.As(err, &mse):
		j.Code, j.ErrorCode, j.Message = mse.ErrorCode(), mse.ErrorCode_, mse.Message
	case errors.As(err, &isf):
		j.Code, j.Message = isf.ErrorCode(), isf.Message
	case errors.As(err, &se):
		j.Code, j.Message = se.Code, se.Message
	case errors.As(err, &ive) && ive.Field != "":
		j.Code, j.Field, j.Message = ive.ErrorCode(), ive.Field, ive.Message
	}
}

// reportError prints err on stderr, and as a JSON line with -json, and
// returns the exit code.
func (c *cat) reportError(err error, interrupted bool) int {
	code, class := c.classify(err, interrupted)
	msg := err.Error()
	if errors.Is(err, errTimeout) || errors.Is(err, context.DeadlineExceeded) {
		msg = fmt.Sprintf("timed out after %s", c.o.timeout)
	}
	j := jsonError{Type: "error", ExitCode: code, Class: class, Error: msg, Hint: c.o.conn.Hint(err)}
	describe(err, &j)
	if j.Hint != "" {
		msg += "; " + j.Hint
	}

	var b strings.Builder
	switch class {
	case "usage":
		fmt.Fprintf(&b, "bidicat: usage: %s\n", msg)
	case "http":
		fmt.Fprintf(&b, "bidicat: HTTP error before the stream: %s\n", msg)
	case "connection":
		fmt.Fprintf(&b, "bidicat: could not connect: %s\n", msg)
	case "stream":
		fmt.Fprintf(&b, "bidicat: error in the middle of the stream: %s\n", msg)
	case "interrupted":
		fmt.Fprintf(&b, "bidicat: interrupted %s", c.interruptedWhile())
		if !c.st.onTTY {
			// On a terminal the summary line said it already.
			sp, sb, rp, rb, _, _ := c.st.snapshot()
			fmt.Fprintf(&b, "; sent %s, received %s", count(sp, sb), count(rp, rb))
		}
		b.WriteString("\n")
	default:
		fmt.Fprintf(&b, "bidicat: %s\n", msg)
	}
	field := func(name string, v any, ok bool) {
		if ok {
			fmt.Fprintf(&b, "  %-21s %v\n", name+":", v)
		}
	}
	field("status", j.Status, j.Status != 0)
	field("error code", j.Code, j.Code != "")
	field("modeled error code", j.ErrorCode, j.ErrorCode != "")
	field("message", j.Message, j.Message != "")
	field("request id", j.RequestID, j.RequestID != "")
	field("original status code", j.OriginalStatusCode, j.OriginalStatusCode != 0)
	field("log stream ARN", j.LogStreamArn, j.LogStreamArn != "")
	field("field", j.Field, j.Field != "")
	if class == "usage" {
		b.WriteString("Run 'bidicat -h' for the flags.\n")
	}
	c.st.write(c.st.stderr, []byte(b.String()))

	if c.o.json {
		c.out.emit(j)
	}
	return code
}
