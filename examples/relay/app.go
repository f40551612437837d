package main

import (
	"crypto/subtle"
	_ "embed"
	"net/http"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/relay"
)

// indexHTML is the page: audio from a file or the microphone, in 20 ms
// frames, and the replies.
//
//go:embed static/index.html
var indexHTML []byte

// endMessage is the page's end-of-input message.
const endMessage = `{"type":"end"}`

// appConfig is what the example's server serves.
type appConfig struct {
	input     bidi.OpenInput // what every call opens
	sample    []byte         // served as /sample+sampleExt when not nil
	sampleExt string         // ".pcm", ".wav", ...
	origins   []string       // relay.Options.OriginPatterns
	token     string         // required ?token=, when not empty
	rotation  *bidi.Rotation // nil: bidi's defaults
	tune      func(*relay.Options)
}

// app is the example's HTTP handler: the page, the relay at /ws, and the
// optional sample.
type app struct {
	mux   *http.ServeMux
	relay *relay.Handler
}

func newApp(client *bidi.Client, cfg appConfig) (*app, error) {
	opts := &relay.Options{
		Open:           relay.Rotating(client, cfg.rotation),
		OriginPatterns: cfg.origins,
		EndOfInput: func(m bidi.Message) bool {
			return m.Type == bidi.DataTypeUTF8 && string(m.Data) == endMessage
		},
		// Live audio prefers a gap to a growing delay.
		Overflow: relay.OverflowDropOldest,
	}
	if cfg.tune != nil {
		cfg.tune(opts)
	}
	in := cfg.input
	h, err := relay.New(client, func(r *http.Request) (*bidi.OpenInput, error) {
		// An application checks its own session here (a cookie, a
		// token) and picks the endpoint for this user; the client never
		// chooses it.
		if cfg.token != "" && subtle.ConstantTimeCompare([]byte(r.URL.Query().Get("token")), []byte(cfg.token)) != 1 {
			return nil, &relay.StatusError{Status: http.StatusUnauthorized, Message: "a valid ?token= is required"}
		}
		in := in
		return &in, nil
	}, opts)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'")
		w.Write(indexHTML)
	})
	mux.Handle("/ws", h)
	if cfg.sample != nil {
		mux.HandleFunc("GET /sample"+cfg.sampleExt, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(cfg.sample)
		})
	}
	return &app{mux: mux, relay: h}, nil
}

func (a *app) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }
