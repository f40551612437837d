package main

import (
	"encoding/json"
	"io"
	"math"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// result is what the toy recognizer answers: a partial result for every
// piece of audio it receives, and a final one when the stream ends.
type result struct {
	Type      string  `json:"type"` // "partial" or "final"
	AudioMS   int     `json:"audio_ms"`
	LevelDBFS float64 `json:"level_dbfs"`
	PitchHz   int     `json:"pitch_hz"`
	Parts     int     `json:"parts,omitempty"`
}

// recognizer is the in-process stand-in for a streaming speech model: it
// reads the audio part by part (RecvPart) and answers each at once with
// a UTF8 partial result, its level and pitch so far; at the end of the
// stream it sends a final result. Behind a server with WholeMessages, as
// the program runs it, the parts of a fragmented message reach it only
// once the message is complete, as they reach a real container. fault,
// if not nil, is asked after each piece of audio whether to reset the
// stream there (a platform failure, for the demo of rotation).
func recognizer(sampleRate int, fault func() bool) biditest.Handler {
	return biditest.HandlerFunc(func(st *biditest.Stream) {
		if st.Accept() != nil {
			return
		}
		a := &analyzer{rate: sampleRate}
		parts := 0
		send := func(typ string) error {
			r := result{Type: typ, AudioMS: a.millis(), LevelDBFS: a.levelDBFS(), PitchHz: a.pitchHz()}
			if math.IsInf(r.LevelDBFS, 0) {
				r.LevelDBFS = -120
			}
			if typ == "final" {
				r.Parts = parts
			}
			b, _ := json.Marshal(r)
			return st.Send(bidi.Text(string(b)))
		}
		for {
			p, err := st.RecvPart()
			if err == io.EOF {
				send("final")
				return
			}
			if err != nil {
				return
			}
			if p.Type != bidi.DataTypeBinary {
				continue
			}
			if fault != nil && fault() {
				st.Reset()
			}
			a.write(p.Data)
			parts++
			if send("partial") != nil {
				return
			}
		}
	})
}
