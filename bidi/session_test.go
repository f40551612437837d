package bidi_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

func TestEchoRoundTrip(t *testing.T) {
	srv := newServer(t, biditest.Echo())
	ctx := testCtx(t)
	sess := open(t, srv.Client(), ctx)
	msgs := []bidi.Message{bidi.Text("hello"), bidi.Binary([]byte{0, 1, 2, 255}), bidi.Text(""), bidi.Binary(bytes.Repeat([]byte("z"), 200<<10))}
	for _, m := range msgs {
		if err := sess.Send(ctx, m); err != nil {
			t.Fatalf("Send: %v", err)
		}
		got, err := sess.Recv(ctx)
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		if !bytes.Equal(got.Data, m.Data) || got.Type != m.Type {
			t.Fatalf("got %d bytes (%v), want %d bytes (%v)", len(got.Data), got.Type, len(m.Data), m.Type)
		}
	}
	if err := sess.CloseSend(); err != nil {
		t.Fatalf("CloseSend: %v", err)
	}
	if err := sess.CloseSend(); err != nil {
		t.Fatalf("second CloseSend: %v", err)
	}
	drainEOF(t, sess)
	if _, err := sess.Recv(ctx); err != io.EOF {
		t.Fatalf("Recv after the end = %v, want io.EOF again", err)
	}
	resp, err := sess.Response(ctx)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("Response = %+v, %v", resp, err)
	}
	if err := sess.Send(ctx, bidi.Text("late")); !errors.Is(err, bidi.ErrSendClosed) {
		t.Fatalf("Send after CloseSend = %v, want ErrSendClosed", err)
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Recv(ctx); !errors.Is(err, bidi.ErrSessionClosed) {
		t.Fatalf("Recv after Close = %v, want ErrSessionClosed", err)
	}

	// On the wire: every part has DataType and CompletionState, the 200
	// KiB message went as 64 KiB parts, and the server verified the
	// request, every chunk signature and the end frame (no violations).
	parts := serverStream(t, srv, 0).Received()
	if len(parts) != 3+4 {
		t.Fatalf("server received %d parts, want 7", len(parts))
	}
	for i, p := range parts {
		if !p.DataTypeSet || !p.CompletionStateSet {
			t.Errorf("part %d: DataType set %v, CompletionState set %v", i, p.DataTypeSet, p.CompletionStateSet)
		}
		if len(p.Data) > (64 << 10) {
			t.Errorf("part %d has %d bytes, more than MaxPartSize", i, len(p.Data))
		}
		if wantComplete := i < 3 || i == 6; p.Complete != wantComplete {
			t.Errorf("part %d: Complete = %v, want %v", i, p.Complete, wantComplete)
		}
	}
}

func TestRequestHeadersAndResponse(t *testing.T) {
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		st.SetInvokedVariant("variant-b")
		st.Accept()
		for {
			if _, err := st.Recv(); err != nil {
				return
			}
		}
	}))
	ctx := testCtx(t)
	in := &bidi.OpenInput{EndpointName: "ep-1", TargetVariant: "variant-b", ModelInvocationPath: "v1/chat", ModelQueryString: "a=1&b=x%20y"}
	sess, err := srv.Client().Open(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	resp, err := sess.Response(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.InvokedProductionVariant != "variant-b" || resp.RequestID == "" {
		t.Fatalf("Response = %+v", resp)
	}
	st := serverStream(t, srv, 0)
	if st.EndpointName != "ep-1" || st.TargetVariant != "variant-b" || st.ModelInvocationPath != "v1/chat" || st.ModelQueryString != "a=1&b=x%20y" {
		t.Fatalf("server saw %q %q %q %q", st.EndpointName, st.TargetVariant, st.ModelInvocationPath, st.ModelQueryString)
	}
	if got := st.Header.Get("Content-Type"); got != "application/vnd.amazon.eventstream" {
		t.Errorf("Content-Type = %q", got)
	}
	if got := st.Header.Get("X-Amz-Content-Sha256"); got != "STREAMING-AWS4-HMAC-SHA256-EVENTS" {
		t.Errorf("X-Amz-Content-Sha256 = %q", got)
	}
	sess.CloseSend()
	drainEOF(t, sess)
}

// TestOpenReturnsBeforeResponse: Open returns once the request is sent,
// without waiting for the response headers, and messages can be sent
// before the service answers.
func TestOpenReturnsBeforeResponse(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		m, err := st.Recv() // before accepting
		if err != nil {
			return
		}
		select {
		case <-release:
		case <-st.Context().Done():
			return
		}
		st.Send(m)
		st.Recv()
	}))
	ctx := testCtx(t)
	sess := open(t, srv.Client(), ctx)
	if err := sess.Send(ctx, bidi.Text("early")); err != nil {
		t.Fatalf("Send before the response: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := sess.Response(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Response before the service answered = %v, want DeadlineExceeded", err)
	}
	close(release)
	m, err := sess.Recv(ctx)
	if err != nil || string(m.Data) != "early" {
		t.Fatalf("Recv = %q, %v", m.Data, err)
	}
	if resp, err := sess.Response(ctx); err != nil || resp.StatusCode != 200 {
		t.Fatalf("Response = %v, %v", resp, err)
	}
	sess.CloseSend()
	drainEOF(t, sess)
}

func TestOpenValidatesBeforeIO(t *testing.T) {
	var dials atomic.Int32
	creds := &countingProvider{}
	c := bidi.NewFromConfig(aws.Config{Region: "us-west-2", Credentials: creds}, func(o *bidi.Options) {
		o.DialContext = func(context.Context, string, string) (net.Conn, error) {
			dials.Add(1)
			return nil, errors.New("unexpected dial")
		}
	})
	ctx := testCtx(t)
	cases := []struct {
		in    *bidi.OpenInput
		field string
	}{
		{nil, "OpenInput"},
		{&bidi.OpenInput{}, "EndpointName"},
		{&bidi.OpenInput{EndpointName: "bad_name"}, "EndpointName"},
		{&bidi.OpenInput{EndpointName: strings.Repeat("a", 64)}, "EndpointName"},
		{&bidi.OpenInput{EndpointName: "ok", TargetVariant: "-x"}, "TargetVariant"},
		{&bidi.OpenInput{EndpointName: "ok", ModelInvocationPath: "/abs"}, "ModelInvocationPath"},
		{&bidi.OpenInput{EndpointName: "ok", ModelQueryString: "a=b c"}, "ModelQueryString"},
	}
	for _, tc := range cases {
		sess, err := c.Open(ctx, tc.in)
		var ive *bidi.InputValidationError
		if sess != nil || !errors.As(err, &ive) || ive.Field != tc.field {
			t.Errorf("Open(%+v) = %v, %v; want *InputValidationError for %s", tc.in, sess, err, tc.field)
		}
	}
	if dials.Load() != 0 {
		t.Error("a connection was dialed for invalid input")
	}
	if creds.calls.Load() != 0 {
		t.Error("credentials were retrieved for invalid input")
	}
}

// countingProvider returns static credentials and counts calls.
type countingProvider struct{ calls atomic.Int32 }

func (p *countingProvider) Retrieve(context.Context) (aws.Credentials, error) {
	p.calls.Add(1)
	return aws.Credentials{AccessKeyID: serverCredentials.AccessKeyID, SecretAccessKey: serverCredentials.SecretAccessKey}, nil
}

// blockingProvider never answers and ignores its context, until released.
type blockingProvider struct{ release chan struct{} }

func (p *blockingProvider) Retrieve(context.Context) (aws.Credentials, error) {
	<-p.release
	return aws.Credentials{}, errors.New("released")
}

// failingProvider fails.
type failingProvider struct{}

func (failingProvider) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials{}, errors.New("no credentials in this test")
}

func TestOpenCredentialFailures(t *testing.T) {
	srv := newServer(t, biditest.Echo())
	ctx := testCtx(t)

	t.Run("error", func(t *testing.T) {
		c := srv.Client(func(o *bidi.Options) { o.Credentials = failingProvider{} })
		sess, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "ep"})
		if sess != nil || err == nil || !strings.Contains(err.Error(), "no credentials in this test") {
			t.Fatalf("Open = %v, %v", sess, err)
		}
	})
	t.Run("hang", func(t *testing.T) {
		p := &blockingProvider{release: make(chan struct{})}
		defer close(p.release)
		c := srv.Client(func(o *bidi.Options) { o.Credentials = p })
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		// Returning at all shows the wait is bounded by ctx.
		sess, err := c.Open(short, &bidi.OpenInput{EndpointName: "ep"})
		if sess != nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Open = %v, %v; want DeadlineExceeded", sess, err)
		}
	})
	t.Run("expired", func(t *testing.T) {
		// Credentials that expired before the client's clock are refused
		// before any I/O (nothing is dialed), as the service would.
		now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		var dials atomic.Int32
		c := srv.Client(func(o *bidi.Options) {
			o.Now = func() time.Time { return now }
			o.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret", CanExpire: true, Expires: now.Add(-time.Minute), Source: "test"}, nil
			})
			o.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				dials.Add(1)
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			}
		})
		sess, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "ep"})
		if sess != nil || !errors.Is(err, bidi.ErrExpiredCredentials) || !errors.Is(err, bidi.ErrInvalidConfig) {
			t.Fatalf("Open = %v, %v; want ErrExpiredCredentials", sess, err)
		}
		for _, want := range []string{"2026-01-02T03:03:05Z", "from test", "1m0s"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Open = %q, want it to name %q", err, want)
			}
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("Open = %q shows the secret", err)
		}
		if n := dials.Load(); n != 0 {
			t.Fatalf("%d dials for expired credentials", n)
		}
	})
	t.Run("expiring later", func(t *testing.T) {
		now := time.Now()
		c := srv.Client(func(o *bidi.Options) {
			inner := o.Credentials
			o.Credentials = aws.CredentialsProviderFunc(func(ctx context.Context) (aws.Credentials, error) {
				cr, err := inner.Retrieve(ctx)
				cr.CanExpire, cr.Expires = true, now.Add(time.Hour)
				return cr, err
			})
		})
		sess, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "ep"})
		if err != nil {
			t.Fatalf("Open with credentials valid for an hour: %v", err)
		}
		roundTrip(t, sess, "valid")
		sess.Close()
	})
	if n := len(srv.Streams()); n != 1 {
		t.Fatalf("server saw %d streams, want 1 (the valid credentials')", n)
	}
}

func TestSendPartRecvPart(t *testing.T) {
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Accept()
		m, err := st.Recv() // reassembled from the client's parts
		if err != nil {
			return
		}
		st.Send(m)
		// Reply as three raw parts.
		st.SendPart(bidi.Part{Data: []byte("ab"), Type: bidi.DataTypeBinary})
		st.SendPart(bidi.Part{Data: []byte("cd")})
		st.SendPart(bidi.Part{Data: []byte("ef"), Complete: true})
		st.Recv()
	}))
	ctx := testCtx(t)
	sess := open(t, srv.Client(), ctx)
	for i, p := range []bidi.Part{{Data: []byte("one "), Type: bidi.DataTypeUTF8}, {Data: []byte("two ")}, {Data: []byte("three"), Complete: true}} {
		if err := sess.SendPart(ctx, p); err != nil {
			t.Fatalf("SendPart %d: %v", i, err)
		}
		if i == 0 {
			if err := sess.Send(ctx, bidi.Text("x")); !errors.Is(err, bidi.ErrMessageInProgress) {
				t.Fatalf("Send during a SendPart message = %v, want ErrMessageInProgress", err)
			}
		}
	}
	m, err := sess.Recv(ctx)
	if err != nil || string(m.Data) != "one two three" || m.Type != bidi.DataTypeUTF8 {
		t.Fatalf("Recv = %q (%v), %v", m.Data, m.Type, err)
	}
	var got []string
	for range 3 {
		p, err := sess.RecvPart(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(p.Data)+map[bool]string{true: "$", false: "…"}[p.Complete])
	}
	if strings.Join(got, " ") != "ab… cd… ef$" {
		t.Fatalf("RecvPart got %v", got)
	}
	sess.CloseSend()
	drainEOF(t, sess)
}

// TestCloseSendInsideMessage: CloseSend refuses to end the request while a
// message begun with SendPart is incomplete, which would hand the model a
// truncated message; once the message is complete it ends the request.
func TestCloseSendInsideMessage(t *testing.T) {
	srv := newServer(t, biditest.Echo())
	ctx := testCtx(t)
	sess := open(t, srv.Client(), ctx)
	if err := sess.SendPart(ctx, bidi.Part{Data: []byte("hel"), Type: bidi.DataTypeUTF8}); err != nil {
		t.Fatal(err)
	}
	if err := sess.CloseSend(); !errors.Is(err, bidi.ErrMessageInProgress) {
		t.Fatalf("CloseSend inside a message = %v, want ErrMessageInProgress", err)
	}
	if err := sess.SendPart(ctx, bidi.Part{Data: []byte("lo"), Complete: true}); err != nil {
		t.Fatalf("SendPart after the refused CloseSend: %v", err)
	}
	if err := sess.CloseSend(); err != nil {
		t.Fatalf("CloseSend after the message: %v", err)
	}
	m, err := sess.Recv(ctx)
	if err != nil || string(m.Data) != "hello" || m.Type != bidi.DataTypeUTF8 {
		t.Fatalf("Recv = %q (%v), %v; want the whole message", m.Data, m.Type, err)
	}
	drainEOF(t, sess)
}

func TestPadding(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy func(int) int
	}{{"default", nil}, {"none", func(int) int { return 0 }}, {"fixed", fixedBucket(1000)}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, biditest.Echo())
			ctx := testCtx(t)
			sess := open(t, srv.Client(func(o *bidi.Options) { o.Padding = tc.policy }), ctx)
			for _, n := range []int{0, 1, 63, 64, 100, 1000, 5000} {
				if err := sess.Send(ctx, bidi.Binary(make([]byte, n))); err != nil {
					t.Fatal(err)
				}
				if _, err := sess.Recv(ctx); err != nil {
					t.Fatal(err)
				}
			}
			sess.CloseSend()
			drainEOF(t, sess)
			for _, p := range serverStream(t, srv, 0).Received() {
				n := len(p.Data)
				switch tc.name {
				case "none":
					if p.Padding != -1 {
						t.Errorf("%d bytes: padding %d, want no P header", n, p.Padding)
					}
				case "default":
					if p.Padding < 1 || (n < 1024 && (n+p.Padding)%64 != 0) {
						t.Errorf("%d bytes: padding %d, padded size not a multiple of 64", n, p.Padding)
					}
				case "fixed":
					if p.Padding < 1 || (n+p.Padding)%1000 != 0 {
						t.Errorf("%d bytes: padding %d, padded size not a multiple of 1000", n, p.Padding)
					}
				}
			}
		})
	}
}

func TestReaderAndMessages(t *testing.T) {
	srv := newServer(t, biditest.Echo())
	ctx := testCtx(t)

	sess := open(t, srv.Client(), ctx)
	for _, s := range []string{"ab", "", "cd", "efg"} {
		if err := sess.Send(ctx, bidi.Text(s)); err != nil {
			t.Fatal(err)
		}
	}
	sess.CloseSend()
	b, err := io.ReadAll(sess.Reader(ctx))
	if err != nil || string(b) != "abcdefg" {
		t.Fatalf("ReadAll(Reader) = %q, %v", b, err)
	}

	sess = open(t, srv.Client(), ctx)
	for _, s := range []string{"x", "y", "z"} {
		if err := sess.Send(ctx, bidi.Text(s)); err != nil {
			t.Fatal(err)
		}
	}
	sess.CloseSend()
	var got []string
	for m, err := range sess.Messages(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(m.Data))
	}
	if strings.Join(got, ",") != "x,y,z" {
		t.Fatalf("Messages yielded %v", got)
	}
}
