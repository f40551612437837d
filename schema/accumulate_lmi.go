package schema

import (
	"slices"
	"strings"

	"github.com/sagemaker-bidi/sagemaker-bidi/schema/framing"
)

// LMIAccumulator rebuilds, from the lines of an LMI rolling-batch stream,
// the [LMIResponse] a non-streaming call returns: the generated text and,
// when details were requested, the details with the streamed tokens.
//
// The zero value is ready to use. Feed it every event of one response,
// then call Result; call Reset before the next response. An
// LMIAccumulator is not safe for concurrent use.
type LMIAccumulator struct {
	text    strings.Builder
	tokens  []Token
	final   bool
	done    bool
	genText *string
	details *Details
	line    LMIStreamLine // decoding buffer, reused
}

// AddEvent adds one event of the stream: a token line, or a [DONE] marker
// if the server sends one. It returns the [*GenerationError] of a line
// reporting that generation failed, the [*ErrorResponse] of an error
// payload, and decoding errors as [framing.Event.Decode] does.
func (a *LMIAccumulator) AddEvent(ev framing.Event) error {
	if ev.Done {
		a.done = true
		return nil
	}
	a.line = LMIStreamLine{}
	if err := decodeEvent(ev, &a.line, bareLine); err != nil {
		return err
	}
	return a.AddLine(&a.line)
}

// bareLine reports whether l may be an error payload: a line with neither
// a token nor what a last line carries.
func bareLine(l *LMIStreamLine) bool { return l.Token == (Token{}) && !l.Final() }

// AddLine merges one decoded line. It keeps no reference to l.
func (a *LMIAccumulator) AddLine(l *LMIStreamLine) error {
	if err := l.Err(); err != nil {
		return err
	}
	a.tokens = append(a.tokens, l.Token)
	if !l.Token.SpecialToken {
		a.text.WriteString(l.Token.Text)
	}
	if l.Final() {
		a.final = true
		if l.GeneratedText != nil {
			s := *l.GeneratedText
			a.genText = &s
		}
		if l.Details != nil {
			a.details = l.Details.clone()
		}
	}
	return nil
}

// Complete reports whether the last line (with generated_text or
// details) or a [DONE] marker was added.
func (a *LMIAccumulator) Complete() bool { return a.final || a.done }

// Result returns the response rebuilt so far. GeneratedText is the last
// line's generated_text when it was sent, else the concatenated text of
// the non-special tokens. Details are the last line's, with Tokens set to
// the streamed tokens when the server did not list them; nil if the
// server sent no details. If the response is not
// [LMIAccumulator.Complete], Result also returns an error matching
// [ErrIncomplete]. The returned response shares no memory with the
// accumulator.
func (a *LMIAccumulator) Result() (*LMIResponse, error) {
	out := &LMIResponse{GeneratedText: a.text.String()}
	if a.genText != nil {
		out.GeneratedText = *a.genText
	}
	if a.details != nil {
		out.Details = a.details.clone()
		if out.Details.Tokens == nil {
			out.Details.Tokens = slices.Clone(a.tokens)
		}
	}
	if !a.Complete() {
		return out, incomplete("no final line")
	}
	return out, nil
}

// Reset forgets the response, ready for the next one.
func (a *LMIAccumulator) Reset() {
	*a = LMIAccumulator{}
}
