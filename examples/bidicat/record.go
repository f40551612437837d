package main

import (
	"context"
	"fmt"
	"os"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/cassette"
)

// session is what bidicat uses of a session: the *bidi.Session itself, or
// with -record a cassette.Recording of it.
type session interface {
	SendPart(ctx context.Context, p bidi.Part) error
	CloseSend() error
	Context() context.Context
	Response(ctx context.Context) (*bidi.Response, error)
	RecvPart(ctx context.Context) (bidi.Part, error)
}

// record returns the session bidicat should use: sess, or with -record
// FILE a recording of it to a new cassette in FILE. stop ends the
// recording (the session's end is recorded, the file flushed and closed)
// and returns a failure to write the file, as a *localError.
func record(o *options, sess *bidi.Session, in *bidi.OpenInput) (s session, stop func() error, err error) {
	if o.record == "" {
		return sess, func() error { return nil }, nil
	}
	f, err := os.Create(o.record)
	if err != nil {
		return nil, nil, &localError{err: fmt.Errorf("-record: %w", err)}
	}
	w, err := cassette.NewWriter(f, &cassette.WriterOptions{Recorder: "bidicat"})
	if err != nil {
		f.Close()
		return nil, nil, &localError{err: fmt.Errorf("-record: %w", err)}
	}
	rec := cassette.Record(sess, in, w, &cassette.RecordOptions{MaxPartSize: o.partSize})
	return rec, func() error {
		err := rec.Close()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return &localError{err: fmt.Errorf("-record: %w", err)}
		}
		return nil
	}, nil
}
