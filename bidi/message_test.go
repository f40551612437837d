package bidi_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// TestSendRejectsBadMessages: an unknown DataType and invalid UTF-8 in a
// UTF8 message (whole or in parts) are refused before any I/O with an
// *InputValidationError naming the field; the session stays usable.
func TestSendRejectsBadMessages(t *testing.T) {
	srv := newServer(t, biditest.Echo())
	ctx := testCtx(t)
	sess := open(t, srv.Client(), ctx)
	for _, tc := range []struct {
		name  string
		send  func() error
		field string
	}{
		{"unknown type", func() error { return sess.Send(ctx, bidi.Message{Data: []byte("x"), Type: 7}) }, "Message.Type"},
		{"invalid UTF-8", func() error { return sess.Send(ctx, bidi.TextBytes([]byte("bad \xff"))) }, "Message.Data"},
		{"unknown part type", func() error { return sess.SendPart(ctx, bidi.Part{Data: []byte("x"), Type: 9}) }, "Part.Type"},
		{"part ends inside a character", func() error {
			if err := sess.SendPart(ctx, bidi.Part{Data: []byte("caf\xc3"), Type: bidi.DataTypeUTF8}); err != nil {
				return err
			}
			return sess.SendPart(ctx, bidi.Part{Data: []byte(""), Type: bidi.DataTypeUTF8, Complete: true})
		}, "Part.Data"},
	} {
		var ive *bidi.InputValidationError
		if err := tc.send(); !errors.As(err, &ive) || ive.Field != tc.field {
			t.Errorf("%s: %v, want an InputValidationError for %s", tc.name, err, tc.field)
		}
	}
	// The message begun with "caf\xc3" can still be completed correctly.
	if err := sess.SendPart(ctx, bidi.Part{Data: []byte("\xa9!"), Type: bidi.DataTypeUTF8, Complete: true}); err != nil {
		t.Fatal(err)
	}
	if m, err := sess.Recv(ctx); err != nil || string(m.Data) != "café!" || m.Type != bidi.DataTypeUTF8 {
		t.Fatalf("Recv = %q, %v", m.Data, err)
	}
	roundTrip(t, sess, "still usable")
}

// TestZeroClient: a Client not built by NewFromConfig fails Open with
// ErrZeroClient instead of panicking.
func TestZeroClient(t *testing.T) {
	var zero bidi.Client
	if _, err := zero.Open(testCtx(t), &bidi.OpenInput{EndpointName: "ep"}); !errors.Is(err, bidi.ErrZeroClient) {
		t.Fatalf("zero Client: %v", err)
	}
	var nilClient *bidi.Client
	if _, err := nilClient.Open(testCtx(t), &bidi.OpenInput{EndpointName: "ep"}); !errors.Is(err, bidi.ErrZeroClient) {
		t.Fatalf("nil Client: %v", err)
	}
}

// TestOpenContextEnded: a session whose Open context is cancelled when
// Open's caller returns says so, and still matches context.Canceled.
func TestOpenContextEnded(t *testing.T) {
	srv := newServer(t, biditest.Echo())
	openHelper := func() *bidi.Session {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel() // the mistake: it ends the session
		sess, err := srv.Client().Open(ctx, &bidi.OpenInput{EndpointName: "ep"})
		if err != nil {
			t.Fatal(err)
		}
		return sess
	}
	sess := openHelper()
	defer sess.Close()
	<-sess.Context().Done()
	err := sess.Send(testCtx(t), bidi.Text("x"))
	var oce *bidi.OpenContextError
	if !errors.As(err, &oce) || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "context given to Open") {
		t.Fatalf("Send = %v, want an OpenContextError wrapping context.Canceled", err)
	}
	if _, err := sess.Recv(testCtx(t)); !errors.As(err, &oce) {
		t.Fatalf("Recv = %v, want an OpenContextError", err)
	}
}
