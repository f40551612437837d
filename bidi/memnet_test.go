package bidi_test

import (
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/memnet"
)

// newMemServer is newServer on a memnet.Listener, for a test in a
// testing/synctest bubble, and the option that makes a client dial it.
func newMemServer(t *testing.T, h biditest.Handler, setup ...func(*biditest.Server)) (*biditest.Server, func(*bidi.Options)) {
	t.Helper()
	l := memnet.Listen()
	srv := newServer(t, h, append([]func(*biditest.Server){func(s *biditest.Server) { s.Listener = l }}, setup...)...)
	return srv, func(o *bidi.Options) { o.DialContext = l.DialContext }
}
