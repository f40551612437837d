package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/cassette"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/inspect"
)

// recordFlags are the flags of recording and of the inspector.
type recordFlags struct {
	dir           string // -record
	inspect       string // -inspect
	inspectRemote bool   // -inspect-remote
	noPreview     bool   // -inspect-no-preview
}

func (f *recordFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.dir, "record", "", "record every session as a cassette (JSON Lines, one file per session) in `dir`, for replay with biditest, e.g. -record testdata/cassettes")
	fs.StringVar(&f.inspect, "inspect", "", "serve the live inspector (sessions, messages, cassette downloads) on `address`, loopback only, e.g. -inspect localhost:8444")
	fs.BoolVar(&f.inspectRemote, "inspect-remote", false, "let the inspector listen on, and answer, other hosts than loopback (it shows payload previews), e.g. -inspect-remote")
	fs.BoolVar(&f.noPreview, "inspect-no-preview", false, "show no payload bytes in the inspector, e.g. -inspect-no-preview")
}

// check validates the flags.
func (f *recordFlags) check() error {
	if f.inspect == "" {
		if f.inspectRemote || f.noPreview {
			return errors.New("-inspect-remote and -inspect-no-preview need -inspect")
		}
		return nil
	}
	host, _, err := net.SplitHostPort(f.inspect)
	if err != nil {
		return fmt.Errorf("-inspect %q: %v", f.inspect, err)
	}
	if !f.inspectRemote {
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("-inspect %q is not a loopback address (add -inspect-remote to serve other hosts)", f.inspect)
		}
	}
	return nil
}

// recording is what -record and -inspect run: the cassette files and
// the inspector's store and HTTP server. A nil *recording records
// nothing.
type recording struct {
	dir   string
	store *inspect.Store
	srv   *http.Server
	done  chan struct{}
	log   *slog.Logger
	seq   atomic.Uint64
}

// startRecording creates the directory and starts the inspector, as the
// flags ask; nil when they ask for neither.
func startRecording(f *recordFlags, log *slog.Logger) (*recording, error) {
	if f.dir == "" && f.inspect == "" {
		return nil, nil
	}
	r := &recording{dir: f.dir, log: log}
	if f.dir != "" {
		if err := os.MkdirAll(f.dir, 0o755); err != nil {
			return nil, fmt.Errorf("-record: %w", err)
		}
		log.Info("recording sessions", "dir", f.dir)
	}
	if f.inspect != "" {
		opts := &inspect.Options{AllowRemote: f.inspectRemote}
		if f.noPreview {
			opts.Preview = -1
		}
		r.store = inspect.NewStore(opts)
		ln, err := net.Listen("tcp", f.inspect)
		if err != nil {
			return nil, fmt.Errorf("-inspect: %w", err)
		}
		r.srv = &http.Server{Handler: r.store.Handler(), ReadHeaderTimeout: 10 * time.Second}
		r.done = make(chan struct{})
		go func() {
			defer close(r.done)
			r.srv.Serve(ln)
		}()
		log.Info("inspector listening", "url", "http://"+ln.Addr().String()+"/")
	}
	return r, nil
}

// hook returns the bridge's Record hook, or nil.
func (r *recording) hook() func(*biditest.Stream) cassette.Sink {
	if r == nil {
		return nil
	}
	return r.sink
}

// sink returns the sinks of one session: its cassette file and the
// inspector, as configured. A file that cannot be created is logged and
// skipped.
func (r *recording) sink(st *biditest.Stream) cassette.Sink {
	var sinks []cassette.Sink
	file := ""
	if r.dir != "" {
		now := time.Now().UTC()
		name := fmt.Sprintf("%s-%06d.jsonl", now.Format("20060102T150405.000Z"), r.seq.Add(1))
		path := filepath.Join(r.dir, name)
		if fs, err := newFileSink(path, now); err != nil {
			r.log.Warn("session not recorded", "err", err)
		} else {
			sinks, file = append(sinks, fs), path
			r.log.Info("recording session", "request_id", st.RequestID, "file", path)
		}
	}
	if r.store != nil {
		sinks = append(sinks, r.store.Sink(file))
	}
	switch len(sinks) {
	case 0:
		return nil
	case 1:
		return sinks[0]
	}
	return cassette.Tee(sinks...)
}

// Close stops the inspector.
func (r *recording) Close() {
	if r == nil || r.srv == nil {
		return
	}
	r.srv.Close()
	<-r.done
}

// fileSink is a cassette written to a file of its own.
type fileSink struct {
	*cassette.Writer
	f *os.File
}

func newFileSink(path string, started time.Time) (*fileSink, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	w, err := cassette.NewWriter(f, &cassette.WriterOptions{Recorder: "gateway", Recorded: started})
	if err != nil {
		f.Close()
		return nil, err
	}
	return &fileSink{Writer: w, f: f}, nil
}

// Close flushes the cassette and closes the file.
func (s *fileSink) Close() error {
	err := s.Writer.Close()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}
