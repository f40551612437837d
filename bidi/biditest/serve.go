package biditest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// serveHTTP is the http.Handler of every generation: it checks the
// request, rejects it with a restJson1 error and records the violation,
// or runs the Handler on a new Stream.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.writeError(w, newRequestID(), http.StatusServiceUnavailable, "ServiceUnavailableError", "server closed")
		return
	}
	if limit := s.maxSessions(); limit > 0 && s.sessions >= limit {
		s.mu.Unlock()
		s.limitLog.printf(s.ErrorLog, "sessions", "biditest: request from %s refused (503): MaxSessions (%d) streams are running", r.RemoteAddr, limit)
		s.writeError(w, newRequestID(), http.StatusServiceUnavailable, "ServiceUnavailableError",
			fmt.Sprintf("The server is running its maximum of %d concurrent streams. Retry later.", limit))
		return
	}
	s.sessions++
	s.handlers.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.sessions--
		s.mu.Unlock()
		s.handlers.Done()
	}()

	reqID := newRequestID()
	st, v := s.newStreamFor(w, r, reqID)
	if v != nil {
		s.record(v)
		s.writeError(w, reqID, v.StatusCode, v.ErrorType, v.Message)
		return
	}
	s.mu.Lock()
	s.streams = append(s.streams, st)
	s.mu.Unlock()

	defer st.cancel(ErrStreamDone)
	st.startRecording()
	if s.MaxStreamAge > 0 {
		expired := make(chan struct{})
		t := time.AfterFunc(s.MaxStreamAge, func() {
			defer close(expired)
			st.expire()
		})
		defer func() {
			if !t.Stop() {
				<-expired // no write after the handler's return
			}
		}()
	}
	defer st.release()
	returned := false
	defer func() { st.recordEnd(!returned) }()
	defer func() {
		if !returned {
			// The handler panicked, or called Reset: stop the writers and
			// let net/http reset the stream.
			st.stopWrites(true)
		}
	}()
	s.handler.ServeBidi(st)
	returned = true
	st.finish()
}

// newStreamFor runs the request checks in the service's order: transport
// and operation, protocol headers, signature, then the inputs.
func (s *Server) newStreamFor(w http.ResponseWriter, r *http.Request, reqID string) (*Stream, *Violation) {
	name, v := checkOperation(r)
	if v != nil {
		return nil, v
	}
	if v := s.checkProtocolHeaders(r); v != nil {
		return nil, v
	}
	var seed []byte
	if !s.SkipVerify {
		if seed, v = s.verifySeed(r); v != nil {
			return nil, v
		}
	}
	in, v := checkInputs(r, name)
	if v != nil {
		return nil, v
	}
	st := &Stream{
		EndpointName:        in.endpointName,
		TargetVariant:       in.targetVariant,
		ModelInvocationPath: in.invocationPath,
		ModelQueryString:    in.queryString,
		Header:              r.Header.Clone(),
		RemoteAddr:          r.RemoteAddr,
		RequestID:           reqID,
		s:                   s,
		r:                   r,
		w:                   w,
		rc:                  http.NewResponseController(w),
	}
	if seed != nil {
		st.verifier = s.newVerifier(seed)
	}
	st.ctx, st.cancel = context.WithCancelCause(r.Context())
	return st, nil
}

// writeError writes a restJson1 error response. The body of a modeled
// error holds the model's member "Message"; AWS-wide errors (signature,
// unknown operation) use "message", as AWS services answer them.
func (s *Server) writeError(w http.ResponseWriter, reqID string, status int, errorType, msg string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set(errorTypeHeader, errorType)
	h.Set(requestIDHeader, reqID)
	s.setDate(h)
	w.WriteHeader(status)
	key := "message"
	if modeledErrors[errorType] {
		key = "Message"
	}
	body, _ := json.Marshal(map[string]string{key: msg})
	w.Write(body)
}

// modeledErrors are the HTTP errors of the service model.
var modeledErrors = map[string]bool{
	validationErrorType: true, "ModelError": true, "InternalServerError": true, "ServiceUnavailableError": true,
}

// setDate sets the Date header from the server's clock when it is not the
// real one (net/http sets it otherwise).
func (s *Server) setDate(h http.Header) {
	if s.Now != nil {
		h.Set("Date", s.Now().UTC().Format(http.TimeFormat))
	}
}

// newRequestID returns a random UUID-shaped request id.
func newRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], b[10:16])
	return string(s[:])
}
