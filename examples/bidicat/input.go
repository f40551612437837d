package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// localError is a failure on this machine (reading input, writing
// output), as opposed to one of the session.
type localError struct{ err error }

func (e *localError) Error() string { return e.err.Error() }
func (e *localError) Unwrap() error { return e.err }

func local(err error) error {
	if err == nil {
		return nil
	}
	return &localError{err: err}
}

// sender sends the input the flags name, part by part, so that the status
// line can count parts and show upload progress.
type sender struct {
	sess session // the session, recorded with -record
	o    *options
	st   *status

	// pending is set while the sender holds input it has not sent in
	// full: a line, file or chunk read but not yet sent to its COMPLETE
	// part. A stream that ends then has cut the input short.
	pending atomic.Bool
}

// run sends the whole input, sets ended, then ends the request side
// with CloseSend.
func (s *sender) run(ctx context.Context, stdin io.Reader, ended *atomic.Bool) error {
	var err error
	switch {
	case s.o.binary != "":
		err = s.sendBinary(ctx, stdin)
	case len(s.o.files) > 0:
		err = s.sendFiles(ctx, stdin)
	default:
		err = s.sendLines(ctx, stdin)
	}
	if err != nil {
		return err
	}
	ended.Store(true)
	if s.o.linger > 0 {
		if err := s.lingerOn(ctx, s.sess.Context().Done()); err != nil {
			return err
		}
	}
	return s.sess.CloseSend()
}

// lingerOn waits, after the input ended, until the model has been silent
// for -linger, or the session ended. With -o answer, an answer tells
// when it is complete ([DONE], finish_reason, LMI's last line): once
// every message sent has its answer the wait ends at once, and while an
// answer is in progress no silence ends it (a model may pause longer
// than -linger between tokens); -timeout still bounds it. ended is
// closed when the session ends.
func (s *sender) lingerOn(ctx context.Context, ended <-chan struct{}) error {
	for {
		var timer *time.Timer
		var timeout <-chan time.Time
		sent, done, open, changed := s.st.answers()
		switch answers := s.o.mode == modeAnswer; {
		case answers && sent > 0 && done >= sent:
			return nil
		case answers && open:
			// no timer: the answer says when it is complete
		default:
			wait := s.o.linger - time.Since(s.st.lastActivity())
			if wait <= 0 {
				return nil
			}
			timer = time.NewTimer(wait)
			timeout = timer.C
		}
		select {
		case <-timeout:
		case <-changed:
			if timer != nil {
				timer.Stop()
			}
		case <-ended:
			return nil // the receiver reports how it ended
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// part sends one part and counts it.
func (s *sender) part(ctx context.Context, data []byte, t bidi.DataType, complete bool) error {
	if err := s.sess.SendPart(ctx, bidi.Part{Data: data, Type: t, Complete: complete}); err != nil {
		return err
	}
	s.st.sent(len(data))
	if complete {
		s.st.sentMessage()
	}
	return nil
}

// sendLines sends each non-empty line of stdin as one message, without
// its line ending. A line longer than a part is sent in PARTIAL parts as
// it is read, so no line is too long; one piece is held back so that the
// line's last part is never an empty one.
func (s *sender) sendLines(ctx context.Context, stdin io.Reader) error {
	r := bufio.NewReaderSize(stdin, s.o.partSize)
	var held []byte // a full piece of a long line, not sent yet
	holding := false
	for {
		piece, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			s.pending.Store(true)
			if holding {
				if err := s.part(ctx, held, s.o.dataType, false); err != nil {
					return err
				}
			}
			held, holding = append(held[:0], piece...), true
			continue
		}
		if err != nil && err != io.EOF {
			return local(fmt.Errorf("reading stdin: %w", err))
		}
		eof := err == io.EOF
		ended := bytes.HasSuffix(piece, []byte("\n"))
		piece = bytes.TrimSuffix(bytes.TrimSuffix(piece, []byte("\n")), []byte("\r"))
		switch {
		case holding && len(piece) == 0:
			if ended { // a "\r\n" split between the pieces
				held = bytes.TrimSuffix(held, []byte("\r"))
			}
			err = s.part(ctx, held, s.o.dataType, true)
		case holding:
			if err = s.part(ctx, held, s.o.dataType, false); err == nil {
				err = s.part(ctx, piece, s.o.dataType, true)
			}
		case len(piece) > 0:
			s.pending.Store(true)
			err = s.part(ctx, piece, s.o.dataType, true)
		default:
			err = nil
		}
		if err != nil {
			return err
		}
		s.pending.Store(false)
		holding = false
		if eof {
			return nil
		}
	}
}

// sendFiles sends each file as one message, streamed from disk in parts.
func (s *sender) sendFiles(ctx context.Context, stdin io.Reader) error {
	var total int64
	for _, name := range s.o.files {
		if name == "-" {
			total = 0 // unknown size: a spinner instead of a bar
			break
		}
		fi, err := os.Stat(name)
		if err != nil {
			return local(err)
		}
		total += fi.Size()
	}
	s.st.setUpload(total)
	s.pending.Store(true)
	for _, name := range s.o.files {
		if err := s.sendFile(ctx, name, stdin); err != nil {
			return err
		}
	}
	s.pending.Store(false)
	return nil
}

func (s *sender) sendFile(ctx context.Context, name string, stdin io.Reader) error {
	r, closeFile, err := openInput(name, stdin)
	if err != nil {
		return err
	}
	defer closeFile()
	cur, next := make([]byte, s.o.partSize), make([]byte, s.o.partSize)
	n, eof, err := fill(r, cur)
	for {
		if err != nil {
			return local(fmt.Errorf("reading %s: %w", name, err))
		}
		if eof {
			return s.part(ctx, cur[:n], s.o.dataType, true)
		}
		// Read ahead to know whether this part is the last one.
		m, eof2, err2 := fill(r, next)
		if err2 == nil && m == 0 && eof2 {
			return s.part(ctx, cur[:n], s.o.dataType, true)
		}
		if err := s.part(ctx, cur[:n], s.o.dataType, false); err != nil {
			return err
		}
		cur, next, n, eof, err = next, cur, m, eof2, err2
	}
}

// sendBinary sends the -binary input as BINARY messages of -chunk bytes,
// chunk i no earlier than i*chunk/rate seconds after the first.
func (s *sender) sendBinary(ctx context.Context, stdin io.Reader) error {
	r, closeFile, err := openInput(s.o.binary, stdin)
	if err != nil {
		return err
	}
	defer closeFile()
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			s.st.setUpload(fi.Size())
		}
	}
	chunk := make([]byte, s.o.chunk)
	start := time.Now()
	var sent int64
	s.pending.Store(true) // the rest of a recording, not more typing
	defer s.pending.Store(false)
	for {
		n, eof, err := fill(r, chunk)
		if err != nil {
			return local(fmt.Errorf("reading %s: %w", s.o.binary, err))
		}
		if n > 0 {
			if s.o.rate > 0 {
				due := start.Add(time.Duration(float64(sent) / s.o.rate * float64(time.Second)))
				if err := sleepUntil(ctx, due); err != nil {
					return err
				}
			}
			if err := s.part(ctx, chunk[:n], bidi.DataTypeBinary, true); err != nil {
				return err
			}
			sent += int64(n)
		}
		if eof {
			return nil
		}
	}
}

// openInput opens name, or returns stdin for "-".
func openInput(name string, stdin io.Reader) (io.Reader, func(), error) {
	if name == "-" {
		return stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, local(err)
	}
	return f, func() { f.Close() }, nil
}

// fill reads into b until it is full or the input ends; eof reports the
// end of the input.
func fill(r io.Reader, b []byte) (n int, eof bool, err error) {
	n, err = io.ReadFull(r, b)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return n, true, nil
	}
	return n, false, err
}

// sleepUntil waits until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
