package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// report is the outcome of a run.
type report struct {
	elapsed     time.Duration
	open        []time.Duration // Open until the response headers
	roundTrips  []time.Duration // Send until the echo is received
	connections int64           // TCP connections dialed
	clientAddrs int             // distinct client addresses at the in-process server, 0 if unknown
}

// sessionResult holds one session's samples.
type sessionResult struct {
	open       time.Duration
	roundTrips []time.Duration
}

// load runs o.sessions sessions at once and collects their samples. The
// first failure cancels the others and is returned.
//
// The first session starts alone and the others once it is answered, as
// in a service whose client is warm, so that opening times are measured
// on a connection already up (the engine would make the others wait for
// the connection being dialed, not dial more).
func load(ctx context.Context, client *bidi.Client, in *bidi.OpenInput, o *options) (*report, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	results := make([]sessionResult, o.sessions)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range o.sessions {
		answered := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := oneSession(ctx, client, in, i, o, answered)
			if err != nil {
				cancel(fmt.Errorf("session %d: %w", i, err))
			}
			results[i] = r
		}()
		if i == 0 {
			select {
			case <-answered:
			case <-ctx.Done():
			}
		}
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	rep := &report{elapsed: time.Since(start)}
	for _, r := range results {
		rep.open = append(rep.open, r.open)
		rep.roundTrips = append(rep.roundTrips, r.roundTrips...)
	}
	return rep, nil
}

// oneSession opens a session, sends its messages one at a time, checks
// each echo and ends the session cleanly.
// It closes answered once the response headers are in.
func oneSession(ctx context.Context, client *bidi.Client, in *bidi.OpenInput, id int, o *options, answered chan<- struct{}) (sessionResult, error) {
	var r sessionResult
	t0 := time.Now()
	sess, err := client.Open(ctx, in)
	if err != nil {
		return r, err
	}
	defer sess.Close()
	if _, err := sess.Response(ctx); err != nil {
		return r, err
	}
	r.open = time.Since(t0)
	close(answered)

	msg := make([]byte, o.size)
	for j := range o.messages {
		fillMessage(msg, id, j)
		t := time.Now()
		if err := sess.Send(ctx, bidi.Message{Data: msg, Type: bidi.DataTypeUTF8}); err != nil {
			return r, err
		}
		echo, err := sess.Recv(ctx)
		if err != nil {
			return r, err
		}
		r.roundTrips = append(r.roundTrips, time.Since(t))
		if !bytes.Equal(echo.Data, msg) {
			return r, fmt.Errorf("message %d: the model's answer is not an echo (is it an echo model?)", j)
		}
	}
	if err := sess.CloseSend(); err != nil {
		return r, err
	}
	if _, err := sess.Recv(ctx); err != io.EOF {
		return r, fmt.Errorf("after the last message: want the end of the stream, got %v", err)
	}
	return r, nil
}

// fillMessage writes a recognizable text message into b.
func fillMessage(b []byte, session, message int) {
	n := copy(b, fmt.Sprintf("session %d message %d ", session, message))
	for i := n; i < len(b); i++ {
		b[i] = '.'
	}
}

func (r *report) print(w io.Writer, o *options) {
	n := len(r.roundTrips)
	secs := r.elapsed.Seconds()
	fmt.Fprintf(w, "%d sessions x %d messages of %d bytes, all from one bidi.Client\n", o.sessions, o.messages, o.size)
	fmt.Fprintf(w, "%d round trips in %s: %.0f messages/s and %.2f MiB/s each way\n",
		n, r.elapsed.Round(time.Millisecond), float64(n)/secs, float64(n*o.size)/secs/(1<<20))
	fmt.Fprintf(w, "connections: %d dialed for the %d sessions", r.connections, o.sessions)
	if r.clientAddrs > 0 {
		fmt.Fprintf(w, ", the server saw %d client address(es)", r.clientAddrs)
	}
	fmt.Fprintln(w, ": the sessions are HTTP/2 streams sharing the client's connections")
	fmt.Fprintf(w, "session open, to response headers: %s\n", percentiles(r.open))
	fmt.Fprintf(w, "message round trip:                %s\n", percentiles(r.roundTrips))
}

// percentiles formats the p50, p90, p99 and max of d (nearest rank).
func percentiles(d []time.Duration) string {
	if len(d) == 0 {
		return "no samples"
	}
	s := slices.Clone(d)
	slices.Sort(s)
	at := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(i, 0)]
	}
	r := func(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }
	return fmt.Sprintf("p50 %v  p90 %v  p99 %v  max %v", r(at(0.50)), r(at(0.90)), r(at(0.99)), r(s[len(s)-1]))
}
