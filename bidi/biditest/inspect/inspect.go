// Package inspect serves a live web view of a biditest.Server's streams,
// for debugging a test in a browser: the streams as they run (state,
// timings, response head, end, close code and reason) and each one's
// messages (direction, type, size, fragment, padding bucket, errors, a
// payload preview), each downloadable as a cassette of sizes and timings:
// the Inspector keeps no payloads, so every part of a download is marked
// redacted (record to a cassette.Writer as well for the payloads). It is
// the page of the local gateway's -inspect flag.
//
// It lives apart from package biditest so that tests that do not look at
// the page do not link it, as net/http/pprof lives apart from net/http.
package inspect

import (
	"net/http"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/cassette"
	store "github.com/sagemaker-bidi/sagemaker-bidi/internal/inspect"
)

// An Inspector records a Server's streams and serves them as a page.
// Record it from a Server and serve it, on loopback only (it refuses
// other clients and Host headers):
//
//	in := inspect.New()
//	srv := biditest.NewUnstartedServer(h)
//	srv.Record = in.Record
//	srv.Start()
//	page := httptest.NewServer(in) // open page.URL in a browser
//
// It keeps at most 1,000 streams and 1,000,000 messages (about 75 MiB),
// dropping the oldest ended streams first. It is safe for concurrent use.
type Inspector struct {
	store *store.Store
	h     http.Handler // the store's
}

// New returns an empty Inspector.
func New() *Inspector {
	st := store.NewStore(nil)
	return &Inspector{store: st, h: st.Handler()}
}

// Record is a biditest.Server.Record hook: it adds st to the view. To
// record to a cassette file as well, combine the sinks with cassette.Tee.
func (in *Inspector) Record(st *biditest.Stream) cassette.Sink {
	return in.store.Sink("")
}

// ServeHTTP serves the page and its API.
func (in *Inspector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	in.h.ServeHTTP(w, r)
}
