package biditest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/cassette"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/loopbackcert"
)

// The credentials and region a Server accepts unless configured
// otherwise (documented on Server.Credentials and Server.Region).
const (
	defaultAccessKeyID     = "AKIDBIDITEST"
	defaultSecretAccessKey = "biditest-secret-access-key-0000"
	defaultRegion          = "us-west-2"
)

// Defaults of the Server fields whose zero value means "default"
// (documented on each field).
const (
	defaultMaxConcurrentStreams = 250
	defaultMaxClockSkew         = 15 * time.Minute
	defaultMaxRecvMessageSize   = 16 << 20
	defaultMaxRecorded          = 1024
	defaultProductionVariant    = "AllTraffic"
)

// A Server is a SageMaker-compatible bidirectional streaming server for
// tests: HTTP/2 over TLS on a loopback address, with SigV4 verification of
// the request and of every event, and a [Handler] that scripts the model.
//
// Fields other than URL and Listener may be set on an unstarted server
// (see [NewUnstartedServer]) and must not be changed after [Server.Start].
// URL, Certificate, AWSConfig and Client are meaningful once
// the server is started. The methods are safe for concurrent use.
type Server struct {
	// URL is the base URL of the server, "https://127.0.0.1:PORT" (or
	// "http://…" with H2C), set by Start. It is the BaseEndpoint of a client.
	URL string

	// Listener accepts the server's connections. Start creates one on a
	// loopback address when it is nil.
	Listener net.Listener

	// TLS is the server's TLS configuration. Nil means a certificate
	// generated at Start for 127.0.0.1, ::1 and localhost; a configuration
	// without certificates gets that certificate added.
	TLS *tls.Config

	// Credentials are the only credentials the server accepts. The zero
	// value means access key ID "AKIDBIDITEST" and secret access key
	// "biditest-secret-access-key-0000" without a session token; Start
	// sets the field to them, so that it always holds the credentials in
	// force. [Server.AWSConfig] and [Server.Client] hand them out. With a SessionToken, requests must sign a
	// matching X-Amz-Security-Token header. With CanExpire, AWSConfig and
	// Client hand them out with their Expires, and a request signed at or
	// after Expires (by the server's clock) is refused as the service
	// refuses expired credentials: 403 ExpiredTokenException.
	Credentials aws.Credentials

	// Region is the signing region the server expects. "" means
	// "us-west-2"; Start sets the field to the region in force.
	Region string

	// SkipVerify accepts requests without checking any signature: the
	// Authorization, X-Amz-Date and X-Amz-Content-Sha256 headers and the
	// :chunk-signature of events are ignored, and bare (unsigned) event
	// messages are accepted in place of envelopes.
	SkipVerify bool

	// MaxConcurrentStreams is the number of concurrent streams a client
	// may open on one connection. 0 means 250; Start sets the field to
	// the value in force.
	MaxConcurrentStreams uint32

	// MaxReceiveBufferPerStream is the HTTP/2 flow-control window for a
	// request body, in bytes. 0 means net/http's default (1 MiB). With a
	// small value, a client writing to a stream whose handler does not
	// receive is blocked by flow control after that many bytes.
	MaxReceiveBufferPerStream int

	// H2C serves HTTP/2 without TLS, with prior knowledge. URL then starts
	// with "http://", and the HTTP client of AWSConfig speaks
	// unencrypted HTTP/2.
	H2C bool

	// MaxClockSkew is how far the request's X-Amz-Date and each event's
	// :date may be from the server's clock. 0 means 15 minutes; a
	// negative value disables the check.
	MaxClockSkew time.Duration

	// MaxRecvMessageSize bounds the message [Stream.Recv] reassembles, in
	// bytes. 0 means 16 MiB.
	MaxRecvMessageSize int

	// MaxRecorded is the number of parts per stream that [Stream.Received]
	// keeps (the first ones, within MaxRecordedBytes). 0 means
	// 1024; a negative value keeps none, for benchmarks.
	MaxRecorded int

	// Now returns the server's clock, used for the skew checks and the
	// Date response header. Nil means time.Now.
	Now func() time.Time

	// ProductionVariant is the variant named in the
	// X-Amzn-Invoked-Production-Variant header of every 200 response
	// whose request names no TargetVariant (a request that names one is
	// answered with it, as SageMaker routes it there). "" means
	// "AllTraffic", the name SageMaker gives the variant of
	// a single-variant endpoint. [Stream.SetInvokedVariant] overrides it
	// per stream.
	ProductionVariant string

	// WholeMessages makes the handler see each request message only once
	// it is complete, as a model container built on a message-level
	// WebSocket library does behind SageMaker: [Stream.RecvPart] holds
	// PARTIAL parts back until the COMPLETE part of their message
	// arrives, then returns them one by one. A message whose held parts
	// cost more than MaxRecvMessageSize (their payloads, plus about a
	// hundred bytes of bookkeeping each, so that a flood of empty PARTIAL
	// parts is bounded too) fails with a *bidi.MessageTooLargeError, and parts of a
	// message the client never completed are dropped at the end of the
	// stream. Use it to see the latency a client sending PARTIAL parts
	// (live audio, say) gets from such a container: the first answer
	// comes only after the whole message.
	WholeMessages bool

	// MaxStreamAge caps how long a stream may last, like the cap
	// SageMaker puts on one connection (about 30 minutes, as reported by
	// users; the service documents none). When a stream reaches it, the
	// server sends the client an InternalStreamFailure ("the stream
	// reached its maximum duration") and ends the response stream; the
	// handler's [Stream.Context] is cancelled with cause
	// [ErrMaxStreamAge], and its Recv and Send methods fail with errors
	// matching ErrMaxStreamAge. Set a short value (a second, say) to test
	// that a client rotates its sessions. 0 means no cap.
	MaxStreamAge time.Duration

	// Record, if set, is called for every stream before its handler runs
	// and returns the sink its traffic is recorded to (nil records
	// nothing): the request, the response head, the parts in both
	// directions, exceptions and error messages sent with the Send
	// methods, the client's end frame and the stream's end, after which
	// the sink is closed. Bytes written with [Stream.WriteRaw] are not
	// recorded. Errors of the sink do not affect the stream: a
	// cassette.Writer keeps the first and returns it from Close. See
	// package cassette, and package bidi/biditest/replay to replay them.
	Record func(st *Stream) cassette.Sink

	// HandshakeTimeout bounds the TLS handshake of a new connection and,
	// with H2C, the wait for its HTTP/2 preface: a client that stalls
	// there (half a TLS record, say) is disconnected. 0 means 10 seconds;
	// a negative value means no limit.
	HandshakeTimeout time.Duration

	// IdleTimeout closes an HTTP/2 connection (with GOAWAY) that has had
	// no stream open for that long. 0 means 30 seconds; a negative value
	// means no limit.
	IdleTimeout time.Duration

	// MaxConnections caps the connections the server holds at once; a
	// connection accepted over the cap is closed at once (the log says
	// so, a few lines a minute at most). 0 means 1024; a negative value
	// means no cap.
	MaxConnections int

	// MaxSessions caps the streams running at once, across connections
	// (MaxConcurrentStreams caps those of one connection); a request over
	// the cap is answered 503 ServiceUnavailableError. 0 means 1024; a
	// negative value means no cap.
	MaxSessions int

	// MaxEventSize caps the bytes a stream buffers for one request event:
	// the payload of a signed envelope (the PayloadPart message with its
	// headers), or a bare event with SkipVerify. A larger event is
	// refused from its length prefix, before its bytes are buffered: the
	// stream fails with a "framing" [*Violation]. With the HTTP/2 window
	// (MaxReceiveBufferPerStream), it bounds what one stream can make the
	// server hold. 0 means 16 MiB + 64 KiB (a part of the largest
	// bidi.Options.MaxPartSize, 16 MiB, with its headers); a negative
	// value means the event-stream limit, 24 MiB.
	MaxEventSize int

	// MaxRecordedBytes caps the bytes the server keeps for
	// [Stream.Received], across every stream it lists: a part is
	// recorded while both MaxRecorded and this budget allow (each part
	// counts its payload and about a hundred bytes of bookkeeping).
	// [Server.ForgetStream] gives a stream's bytes back. 0 means 64 MiB;
	// a negative value means no budget.
	MaxRecordedBytes int

	// OnViolation, if set, is called with every protocol violation as the
	// server finds it, in the goroutine of the request that broke the
	// rule, instead of keeping it for [Server.Violations]: a long-running
	// server (the local gateway in examples/gateway, for one) logs them
	// as they come without keeping them. It must not block for long: the
	// rejection of the request waits for it.
	OnViolation func(v *Violation)

	// ErrorLog receives net/http's server errors and the server's own
	// (failed accepts, connections over MaxConnections, streams over
	// MaxSessions). Nil means standard error, without TLS handshake
	// failures.
	ErrorLog *log.Logger

	handler   Handler
	creds     aws.Credentials
	region    string
	maxSkew   time.Duration
	cert      *x509.Certificate
	tlsConfig *tls.Config
	client    *http.Client
	ctx       context.Context
	cancel    context.CancelCauseFunc
	acceptCh  chan *trackedConn

	mu         sync.Mutex
	started    bool
	closed     bool
	stopping   atomic.Bool   // Shutdown closed the listener
	gen        *generation   // serves new connections
	gens       []*generation // every generation, the current one last
	conns      map[*trackedConn]struct{}
	streams    []*Stream
	sdkClients []*bidi.Client                // made by Client
	paused     atomic.Pointer[chan struct{}] // non-nil while connections are paused
	sessions   int                           // streams running (counted against MaxSessions)
	recorded   int                           // bytes kept for Received (against MaxRecordedBytes)
	limitLog   logThrottle                   // the lines a client can cause at will
	violations []error
	handlers   sync.WaitGroup // running ServeHTTP calls
	bg         sync.WaitGroup // the accept loop, Serve loops and background shutdowns
}

// NewServer starts and returns a new Server running h. A nil h means
// [Echo]. The caller should call Close when finished, to shut it down.
func NewServer(h Handler) *Server {
	s := NewUnstartedServer(h)
	s.Start()
	return s
}

// NewUnstartedServer returns a new Server running h, without starting it.
// A nil h means [Echo]. Set its fields, then call [Server.Start].
func NewUnstartedServer(h Handler) *Server {
	if h == nil {
		h = Echo()
	}
	return &Server{handler: h}
}

// Start starts a server from NewUnstartedServer. It panics if the server
// was already started or closed, or if it cannot listen on a loopback
// address.
func (s *Server) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		panic("biditest: Server started twice or after Close")
	}
	s.started = true

	s.creds = s.Credentials
	if s.creds.AccessKeyID == "" && s.creds.SecretAccessKey == "" {
		s.creds = aws.Credentials{AccessKeyID: defaultAccessKeyID, SecretAccessKey: defaultSecretAccessKey, Source: "biditest"}
		s.Credentials = s.creds
	}
	s.region = s.Region
	if s.region == "" {
		s.region = defaultRegion
		s.Region = s.region
	}
	if s.MaxConcurrentStreams == 0 {
		s.MaxConcurrentStreams = defaultMaxConcurrentStreams
	}
	s.maxSkew = s.MaxClockSkew
	if s.maxSkew == 0 {
		s.maxSkew = defaultMaxClockSkew
	}
	if s.ErrorLog == nil {
		s.ErrorLog = log.New(handshakeFilter{os.Stderr}, "", log.LstdFlags)
	}
	if s.Listener == nil {
		s.Listener = newLocalListener()
	}
	scheme := "http"
	if !s.H2C {
		scheme = "https"
		s.setupTLS()
	}
	s.URL = scheme + "://" + s.Listener.Addr().String()
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	s.acceptCh = make(chan *trackedConn)
	s.conns = make(map[*trackedConn]struct{})
	s.client = s.newClient()

	s.bg.Add(1)
	go s.acceptLoop()
	s.startGenerationLocked()
}

func newLocalListener() net.Listener {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err == nil {
		return l
	}
	if l, err6 := net.Listen("tcp6", "[::1]:0"); err6 == nil {
		return l
	}
	panic(fmt.Sprintf("biditest: failed to listen on a loopback port: %v", err))
}

func (s *Server) setupTLS() {
	cfg := s.TLS.Clone()
	if cfg == nil {
		cfg = new(tls.Config)
	}
	if len(cfg.Certificates) == 0 && cfg.GetCertificate == nil {
		cert, err := loopbackcert.New("biditest")
		if err != nil {
			panic(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if len(cfg.Certificates) > 0 {
		s.cert = leafOf(&cfg.Certificates[0])
	}
	s.tlsConfig = cfg
}

func (s *Server) newClient() *http.Client {
	tr := &http.Transport{
		Protocols:         new(http.Protocols),
		ForceAttemptHTTP2: true,
	}
	if s.H2C {
		tr.Protocols.SetUnencryptedHTTP2(true)
	} else {
		pool := x509.NewCertPool()
		if s.cert != nil {
			pool.AddCert(s.cert)
		}
		tr.Protocols.SetHTTP2(true)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	return &http.Client{Transport: tr}
}

// Close shuts the server down: it stops listening, cancels the context of
// every stream (with cause [ErrServerClosed]), closes every connection and
// waits for the handlers to return. [Server.Shutdown] lets streams finish
// first. A handler should watch [Stream.Context]; Close reports to
// ErrorLog when one is still running after 5 seconds, and keeps waiting.
// Close may be called more than once.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	started, gens := s.started, s.gens
	s.mu.Unlock()
	if !started {
		if s.Listener != nil {
			s.Listener.Close()
		}
		return
	}

	s.resumeConnections() // so that closing connections can write
	s.cancel(ErrServerClosed)
	s.Listener.Close()
	for _, g := range gens {
		g.ln.Close()
		g.srv.Close()
	}
	s.closeConns()

	done := make(chan struct{})
	go func() {
		s.handlers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		s.ErrorLog.Printf("biditest: Server.Close waiting for handlers to return (%s)", s.URL)
		<-done
	}
	s.bg.Wait()
	s.client.CloseIdleConnections()
	s.mu.Lock()
	clients := s.sdkClients
	s.mu.Unlock()
	for _, c := range clients {
		c.CloseIdleConnections()
	}
}

// CloseClientConnections closes every connection abruptly, at the TCP
// level, without GOAWAY or RST_STREAM. Handlers see their
// [Stream.Context] done. The server keeps accepting new connections.
func (s *Server) CloseClientConnections() {
	s.closeConns()
}

func (s *Server) closeConns() {
	s.mu.Lock()
	conns := make([]*trackedConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// PauseConnections freezes every connection, current and new: the server
// stops reading and writing (a read already in progress may complete),
// so it answers neither requests nor HTTP/2 PINGs, like a peer that died
// without closing its TCP connections. Handlers keep running but their
// writes block. Calling resume, or Close, lets the connections proceed;
// resume may be called more than once. CloseClientConnections closes
// paused connections as any other. Pausing paused connections does
// nothing more.
func (s *Server) PauseConnections() (resume func()) {
	gate := make(chan struct{})
	s.paused.CompareAndSwap(nil, &gate)
	return s.resumeConnections
}

// resumeConnections lets paused connections proceed.
func (s *Server) resumeConnections() {
	if gate := s.paused.Swap(nil); gate != nil {
		close(*gate)
	}
}

// GoAway starts a graceful shutdown of every current connection: each
// gets an HTTP/2 GOAWAY frame (NO_ERROR), its running streams may finish,
// and it closes once they have. New streams go to new connections, which
// the server keeps accepting. GoAway returns once every such connection
// has written the frame or closed (at most about a second), plus a short
// grace period for clients to read it. As with a real server, a stream a
// client starts at the same moment may still be refused.
func (s *Server) GoAway() {
	s.mu.Lock()
	if !s.started || s.closed {
		s.mu.Unlock()
		return
	}
	old := s.gen
	s.startGenerationLocked()
	var pending []*trackedConn
	var marks []uint64
	for c := range s.conns {
		if c.gen == old {
			pending = append(pending, c)
			marks = append(marks, c.writes.Load())
		}
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		// Shutdown closes the generation's listener, sends GOAWAY on its
		// HTTP/2 connections and waits for them to finish, or for Close.
		old.srv.Shutdown(s.ctx)
	}()
	s.mu.Unlock()

	if len(pending) == 0 {
		return
	}
	deadline := time.Now().Add(time.Second)
	for i, c := range pending {
		for c.writes.Load() == marks[i] && !c.closed.Load() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	// HTTP/2 has no acknowledgement of GOAWAY: give the clients a moment
	// to read it before they start new streams.
	time.Sleep(goAwayGrace)
}

// goAwayGrace is how long GoAway waits after the frames went out.
const goAwayGrace = 50 * time.Millisecond

// Certificate returns the certificate the server presents, or nil with
// H2C.
func (s *Server) Certificate() *x509.Certificate { return s.cert }

// AWSConfig returns a configuration for the server: its Region, the
// credentials it accepts (static ones, or with their expiry when
// Credentials.CanExpire is set), BaseEndpoint set to URL, and as
// HTTPClient an *http.Client, HTTP/2 only, that trusts the server's
// certificate and nothing else (with H2C, one speaking unencrypted
// HTTP/2): the client for raw requests, or for an AWS SDK client. Every
// call hands out the same *http.Client; Close closes its idle
// connections.
func (s *Server) AWSConfig() aws.Config {
	return aws.Config{
		Region:       s.region,
		Credentials:  s.credentialsProvider(),
		BaseEndpoint: aws.String(s.URL),
		HTTPClient:   s.client,
	}
}

// credentialsProvider hands out the server's credentials, with their
// expiry when they can expire.
func (s *Server) credentialsProvider() aws.CredentialsProvider {
	if !s.creds.CanExpire {
		return credentials.NewStaticCredentialsProvider(s.creds.AccessKeyID, s.creds.SecretAccessKey, s.creds.SessionToken)
	}
	creds := s.creds
	creds.Source = "biditest"
	return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return creds, nil })
}

// Client returns a *bidi.Client for the server (unlike httptest's
// Server.Client, which returns an *http.Client: that one is AWSConfig's
// HTTPClient):
// bidi.NewFromConfig with AWSConfig, Region and BaseEndpoint, then optFns.
// Unless optFns set RootCAs of their own, the client trusts only the
// server's certificate (Options.TLSConfig), so that
// sessions run as they would in production. Close closes its idle
// connections.
func (s *Server) Client(optFns ...func(*bidi.Options)) *bidi.Client {
	fns := make([]func(*bidi.Options), 0, len(optFns)+2)
	fns = append(fns, func(o *bidi.Options) {
		o.Region = s.region
		o.BaseEndpoint = aws.String(s.URL)
	})
	fns = append(fns, optFns...)
	fns = append(fns, func(o *bidi.Options) {
		if !s.H2C && (o.TLSConfig == nil || o.TLSConfig.RootCAs == nil) {
			// Trust the server's certificate, and only it.
			pool := x509.NewCertPool()
			if s.cert != nil {
				pool.AddCert(s.cert)
			}
			cfg := &tls.Config{}
			if o.TLSConfig != nil {
				cfg = o.TLSConfig.Clone()
			}
			cfg.RootCAs = pool
			o.TLSConfig = cfg
		}
	})
	c := bidi.NewFromConfig(s.AWSConfig(), fns...)
	s.mu.Lock()
	s.sdkClients = append(s.sdkClients, c)
	s.mu.Unlock()
	return c
}

// Streams returns every stream that reached the handler so far, in
// arrival order. Requests rejected before the handler are not streams;
// see Violations.
func (s *Server) Streams() []*Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Stream(nil), s.streams...)
}

// Violations returns the protocol violations seen so far, in order: each
// is a [*Violation]. With [Server.OnViolation] set it returns none.
func (s *Server) Violations() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.violations...)
}

// record hands v to OnViolation, or keeps it for Violations.
func (s *Server) record(v *Violation) {
	if s.OnViolation != nil {
		s.OnViolation(v)
		return
	}
	s.mu.Lock()
	s.violations = append(s.violations, v)
	s.mu.Unlock()
}

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// handshakeFilter drops the log lines of failed TLS handshakes, which
// clients that do not trust the server cause on purpose.
type handshakeFilter struct{ w io.Writer }

func (f handshakeFilter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("TLS handshake error")) {
		return len(p), nil
	}
	return f.w.Write(p)
}
