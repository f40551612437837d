package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/cli"
)

// Output modes of -o.
const (
	modeRaw    = "raw"
	modeEvents = "events"
	modeAnswer = "answer"
)

// Defaults of the input flags.
const (
	defaultChunk  = 3200 // 100 ms of 16 kHz 16-bit mono PCM
	localEndpoint = "local-demo"
	// defaultLinger is -linger when the input is not typed on a terminal.
	defaultLinger = time.Second
)

// options is the parsed command line.
type options struct {
	// Where to connect.
	conn   cli.Flags
	caCert string
	local  bool

	// What to send.
	files    []string
	binary   string
	chunk    int
	rate     float64
	dataType bidi.DataType
	partSize int

	// What to print.
	mode    string
	json    bool
	parts   bool
	newline bool
	quiet   bool
	debug   bool
	linger  time.Duration
	timeout time.Duration
	version bool
	record  string // -record: the cassette file (record.go)

	// Flags given on the command line, whose defaults depend on the
	// terminals (see applyDefaults).
	lingerSet, newlineSet bool
}

// fileList is a repeatable string flag.
type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(s string) error { *f = append(*f, s); return nil }

// newFlagSet defines every flag on a new flag set writing to out. The
// -type value lands in dataType, for parseFlags to check.
func newFlagSet(o *options, dataType *string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("bidicat", flag.ContinueOnError)
	fs.SetOutput(out)

	o.conn.Register(fs, " (required unless -local)")
	o.conn.RegisterPath(fs)
	o.conn.RegisterQuery(fs)
	fs.StringVar(&o.caCert, "ca-cert", "", "also trust the PEM certificates in `file`, e.g. -ca-cert /tmp/gateway.pem")
	fs.BoolVar(&o.local, "local", false, "use an in-process demo server instead of AWS (no account needed), e.g. -local")

	fs.Var((*fileList)(&o.files), "file", "send the whole `file` as one message; repeatable; - is stdin, e.g. -file a.json -file b.json")
	fs.StringVar(&o.binary, "binary", "", "send `file` as BINARY messages of -chunk bytes each; - is stdin, e.g. -binary speech.pcm")
	fs.IntVar(&o.chunk, "chunk", defaultChunk, "with -binary, `bytes` per message, e.g. -chunk 6400")
	fs.Float64Var(&o.rate, "rate", 0, "with -binary, send at most this many `bytes` per second (0: no pacing), e.g. -rate 32000 (16 kHz 16-bit mono)")
	fs.StringVar(dataType, "type", "utf8", "data `type` of lines and -file messages, utf8 or binary, e.g. -type binary")
	fs.IntVar(&o.partSize, "part-size", 64<<10, "largest part in `bytes`; longer messages go as PARTIAL…COMPLETE parts, e.g. -part-size 1024")

	fs.StringVar(&o.mode, "o", modeRaw, "output `mode`: raw (message bytes), events (decoded SSE or JSON Lines events) or answer (answers printed as they stream, "+
		"rebuilt by package schema; a complete answer ends the -linger wait), e.g. -o answer")
	fs.BoolVar(&o.json, "json", false, "print one JSON object per line: response, messages, events, answers, errors, summary, e.g. -json")
	fs.BoolVar(&o.parts, "parts", false, "with -json -o raw, one object per part as it arrives instead of per message, e.g. -json -parts")
	fs.BoolVar(&o.newline, "nl", false, "with -o raw, write a newline after each complete message (default true when stdout is a terminal, where messages would run together; "+
		"piped UTF8 output ends with one newline unless -nl=false, which writes the bytes exactly as received), e.g. -nl")
	fs.BoolVar(&o.quiet, "q", false, "no status line or notes on stderr (errors are still reported), e.g. -q")
	fs.BoolVar(&o.debug, "debug", false, "print the SDK's diagnostic lines on stderr (retries, stream ends; never payloads or credentials), e.g. -debug")
	fs.DurationVar(&o.linger, "linger", 0, "after the input ends, wait until the model has been silent for this `duration` before ending the session "+
		"(default 1s when the input is not typed on a terminal, except with -local; 0 ends it at once): SageMaker closes the model's "+
		"WebSocket when the client's side ends, and a model still answering loses its last output, e.g. -linger 3s")
	fs.DurationVar(&o.timeout, "timeout", 0, "give up after this `duration` (0: never), e.g. -timeout 30s")
	fs.StringVar(&o.record, "record", "", "record the session as a cassette (JSON Lines: both directions' parts, timings, the end) in `file`, for replay with biditest; "+
		"it holds payloads, never credentials or signatures, e.g. -record session.jsonl")
	fs.BoolVar(&o.version, "version", false, "print the version of bidicat and of the Go toolchain that built it, e.g. -version")
	fs.Usage = func() { usage(fs, fs.Output()) }
	return fs
}

// usage prints the help of -h on out.
func usage(fs *flag.FlagSet, out io.Writer) {
	defer fs.SetOutput(fs.Output())
	fs.SetOutput(out)
	fmt.Fprint(out, `Usage: bidicat [flags]

Opens one bidirectional streaming session with a SageMaker endpoint, sends
standard input line by line (or -file, or -binary in paced chunks) and prints
what the model streams back. On a terminal, a status line on stderr shows the
invoked variant, bytes and parts each way, the time to the first byte and a
spinner or an upload progress bar (when the input is typed on the terminal,
only a summary at the end).

Flags:
`)
	fs.PrintDefaults()
	fmt.Fprint(out, `
Examples:
  # no AWS account: an in-process demo chat model
  echo '{"messages":[{"role":"user","content":"hi"}],"stream":true}' | bidicat -local -o answer

  # a real endpoint, one JSON request per line, machine-readable output
  bidicat -endpoint my-endpoint -region us-west-2 -o events -json < requests.jsonl

  # the local gateway (examples/gateway) in front of a model container; -linger
  # keeps the stream open until the model has been quiet 3s after the input
  bidicat -endpoint demo -endpoint-url https://localhost:8443 -ca-cert /tmp/gateway.pem -query mode=echo -linger 3s

  # live audio: 16 kHz 16-bit mono PCM in 100 ms messages, in real time
  bidicat -endpoint asr -binary speech.pcm -chunk 3200 -rate 32000 -o raw -json -parts

Exit codes:
  0    success: the stream ended cleanly
  1    other failures: credentials, local files, output the model sent
       that could not be decoded or that ended before the answer did
  2    usage error: bad flags or values the SDK rejects before any I/O
  3    HTTP error before the stream started (printed with its status,
       error code, message, request id and, for a 424 ModelError, the
       original status code and log stream ARN)
  4    error in the middle of the stream (ModelStreamError,
       InternalStreamFailure, a cut or malformed stream, a dead connection,
       the stream ended before all the input was sent)
  5    could not connect: DNS, refused connection, TLS or certificate,
       a server that does not speak HTTP/2 (http:// for a TLS port)
  130  interrupted
`)
}

// usageError is a command line that parses but makes no sense.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// parseFlags parses args. It prints the help of -h on stdout and returns
// flag.ErrHelp, and prints parse errors itself on stderr (the error and a
// pointer to -h, not the whole usage); other problems come back as a
// *usageError.
func parseFlags(args []string, stdout, stderr io.Writer) (*options, error) {
	o := &options{}
	var dataType string
	fs := newFlagSet(o, &dataType, stderr)
	fs.Usage = func() { usage(fs, stdout) }
	if err := cli.Parse(fs, args); err != nil {
		return nil, err
	}
	if o.version {
		return o, nil
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	o.lingerSet, o.newlineSet = set["linger"], set["nl"]
	o.conn.Debug = o.debug
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q (input comes from stdin, -file or -binary)", fs.Arg(0))
	}
	switch strings.ToLower(dataType) {
	case "utf8", "utf-8", "text":
		o.dataType = bidi.DataTypeUTF8
	case "binary":
		o.dataType = bidi.DataTypeBinary
	default:
		return nil, usagef("-type %q: want utf8 or binary", dataType)
	}
	switch o.mode {
	case modeRaw, modeEvents, modeAnswer:
	default:
		return nil, usagef("-o %q: want raw, events or answer", o.mode)
	}
	return o, o.check(set)
}

// check reports flags that contradict each other, and connection flags
// the service would reject.
func (o *options) check(set map[string]bool) error {
	if err := o.conn.Check(); err != nil {
		return &usageError{msg: err.Error()}
	}
	switch {
	case o.conn.Endpoint == "" && !o.local:
		return usagef("no endpoint: use -endpoint NAME, or -local for the in-process demo server")
	case o.local && (o.conn.EndpointURL != "" || o.caCert != "" || o.conn.Profile != "" || o.conn.Region != ""):
		return usagef("-local runs its own server: it takes no -endpoint-url, -ca-cert, -profile or -region")
	case o.binary != "" && len(o.files) > 0:
		return usagef("-binary and -file cannot be combined")
	case o.binary == "" && (set["chunk"] || set["rate"]):
		return usagef("-chunk and -rate apply to -binary only")
	case o.binary != "" && set["type"]:
		return usagef("-binary always sends BINARY messages; drop -type")
	case o.chunk <= 0:
		return usagef("-chunk %d: want a positive number of bytes", o.chunk)
	case o.rate < 0:
		return usagef("-rate %g: want a positive rate, or 0 for none", o.rate)
	case o.partSize <= 0 || o.partSize > 16<<20: // bidi's largest Options.MaxPartSize
		return usagef("-part-size %d: want 1 to %d bytes", o.partSize, 16<<20)
	case o.parts && (!o.json || o.mode != modeRaw):
		return usagef("-parts applies to -json -o raw only")
	case o.newline && o.mode != modeRaw:
		return usagef("-nl applies to -o raw only")
	case o.timeout < 0 || o.linger < 0:
		return usagef("-timeout and -linger want positive durations")
	}
	return nil
}

// applyDefaults sets the defaults that depend on the terminals: with
// input that is not typed, -linger 1s (a model gets time to answer the
// last input before a SageMaker-like service closes its WebSocket;
// someone typing has seen the answers before pressing Ctrl-D, and the
// in-process demo model of -local answers until the stream ends); with
// raw output on a terminal, -nl.
func (o *options) applyDefaults(typing, stdoutTTY bool) {
	if !o.lingerSet && !typing && !o.local {
		o.linger = defaultLinger
	}
	if !o.newlineSet && stdoutTTY && o.mode == modeRaw && !o.json {
		o.newline = true
	}
}

// wantsJSON reports whether args ask for -json, for the output of a
// command line that did not parse: the flags before "--", -json,
// --json, -json=BOOL, the last one winning.
func wantsJSON(args []string) bool {
	json := false
	for _, a := range args {
		if a == "--" {
			break
		}
		name, ok := strings.CutPrefix(a, "-")
		if !ok {
			continue
		}
		name = strings.TrimPrefix(name, "-")
		if name == "json" {
			json = true
		} else if v, ok := strings.CutPrefix(name, "json="); ok {
			json, _ = strconv.ParseBool(v)
		}
	}
	return json
}

// isHelp reports whether err asks for the usage text only.
func isHelp(err error) bool { return errors.Is(err, flag.ErrHelp) }
