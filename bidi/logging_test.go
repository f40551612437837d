package bidi_test

import (
	"errors"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// TestNothingSensitiveLogged runs sessions through their lifecycle events
// (open, retry, answer, mid-stream error, HTTP error, close) and checks
// that neither the log nor any error string contains a payload, a
// credential or a signature.
func TestNothingSensitiveLogged(t *testing.T) {
	const (
		payload = "PAYLOAD-SECRET-42"
		token   = "SESSION-TOKEN-SECRET"
	)
	var attempts atomic.Int32
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		switch st.EndpointName {
		case "retry":
			if attempts.Add(1) == 1 {
				st.Recv()
				st.Fail(503, "ServiceUnavailableError", map[string]any{"Message": "busy"})
				return
			}
		case "fail":
			st.Recv()
			st.Fail(424, "ModelError", map[string]any{"Message": "model failed", "OriginalMessage": "echo: " + payload})
			return
		case "exception":
			st.Accept()
			st.Recv()
			st.SendException("ModelStreamError", []byte(`{"Message":"stream broke","ErrorCode":"E"}`))
			return
		}
		biditest.Echo().ServeBidi(st)
	}), func(s *biditest.Server) {
		s.Credentials = aws.Credentials{AccessKeyID: serverCredentials.AccessKeyID, SecretAccessKey: serverCredentials.SecretAccessKey, SessionToken: token}
	})
	log := &captureLogger{}
	c := srv.Client(fastRetry, func(o *bidi.Options) {
		o.Logger = log
		o.ClientLogMode = aws.LogRetries | aws.LogRequest | aws.LogResponse | aws.LogSigning
	})
	ctx := testCtx(t)
	var errs []error
	for _, name := range []string{"echo", "retry", "fail", "exception", "closed"} {
		sess, err := c.Open(ctx, &bidi.OpenInput{EndpointName: name})
		if err != nil {
			t.Fatalf("Open %s: %v", name, err)
		}
		if err := sess.Send(ctx, bidi.Text(payload)); err != nil {
			errs = append(errs, err)
		}
		if name == "closed" {
			sess.Close()
		}
		for {
			_, err := sess.Recv(ctx)
			if err != nil {
				errs = append(errs, err)
				break
			}
			sess.CloseSend()
		}
		errs = append(errs, sess.Send(ctx, bidi.Text(payload)))
		sess.Close()
	}

	logText := log.text()
	if logText == "" {
		t.Fatal("nothing was logged")
	}
	t.Logf("log:\n%s", logText)
	var errText []string
	for _, err := range errs {
		if err != nil {
			errText = append(errText, err.Error())
		}
	}
	if len(errText) < 5 {
		t.Fatalf("only %d errors collected: %q", len(errText), errText)
	}
	secrets := []string{payload, serverCredentials.SecretAccessKey, serverCredentials.AccessKeyID, token}
	if auth := serverStream(t, srv, 0).Header.Get("Authorization"); auth != "" {
		_, sig, ok := strings.Cut(auth, "Signature=")
		if !ok || len(sig) != 64 {
			t.Fatalf("unexpected Authorization header shape")
		}
		secrets = append(secrets, sig)
	}
	hex64 := regexp.MustCompile(`[0-9a-f]{64}`)
	for what, text := range map[string]string{"log": logText, "errors": strings.Join(errText, "\n")} {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s contain a secret (%.6s…)", what, s)
			}
		}
		if hex64.MatchString(text) {
			t.Errorf("%s contain something that looks like a signature", what)
		}
	}
}

// TestSilentWithoutLogMode checks that a client with a logger but no
// ClientLogMode (what config.LoadDefaultConfig gives) logs nothing, as AWS
// service clients do.
func TestSilentWithoutLogMode(t *testing.T) {
	srv := biditest.NewServer(biditest.Echo())
	defer srv.Close()
	log := &captureLogger{}
	c := srv.Client(func(o *bidi.Options) { o.Logger = log })
	ctx := testCtx(t)
	sess, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "quiet"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Send(ctx, bidi.Text("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Recv(ctx); err != nil {
		t.Fatal(err)
	}
	sess.Close()
	if got := log.text(); got != "" {
		t.Fatalf("logged without a log mode:\n%s", got)
	}
}

// TestLoggedErrorCodeSanitised: an error code chosen by the service is
// logged through the same sanitising as error strings: no control
// characters (a forged log line, terminal escapes).
func TestLoggedErrorCodeSanitised(t *testing.T) {
	const code = "Bad\nDEBUG forged line\x1b[2J"
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Accept()
		st.SendError(code, "broken")
		<-st.Context().Done()
	}))
	log := &captureLogger{}
	c := srv.Client(func(o *bidi.Options) { o.Logger = log; o.ClientLogMode = aws.LogRequest })
	ctx := testCtx(t)
	sess := open(t, c, ctx)
	var se *bidi.StreamError
	if _, err := sess.Recv(ctx); !errors.As(err, &se) || se.Code != code {
		t.Fatalf("Recv = %v, want *StreamError with the code", err)
	}
	sess.Close()
	log.mu.Lock()
	defer log.mu.Unlock()
	found := false
	for _, l := range log.lines {
		if strings.ContainsAny(l, "\n\x1b") {
			t.Errorf("log line with a control character: %q", l)
		}
		found = found || strings.Contains(l, "Bad?DEBUG forged line?[2J")
	}
	if !found {
		t.Errorf("the sanitised error code was not logged:\n%s", strings.Join(log.lines, "\n"))
	}
}
