package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Parse parses args into fs as fs.Parse does, but tells a newcomer what
// went wrong without burying it: an unknown flag or a bad value prints
// "NAME: usage: the error" and "Run 'NAME -h' for the flags." on fs's
// output rather than the whole usage text; -h (or -help) prints the usage
// and returns [flag.ErrHelp]. The usage is printed once, by fs.Usage,
// which may write it somewhere else than fs's output (a program that
// prints -h on stdout, say).
func Parse(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
	case err != nil:
		usageError(fs, err)
	}
	return err
}

// ParseChecked is Parse followed by conn.Check, whose error it reports
// to fs's output the way Parse reports a bad flag.
func ParseChecked(fs *flag.FlagSet, args []string, conn *Flags) error {
	if err := Parse(fs, args); err != nil {
		return err
	}
	if err := conn.Check(); err != nil {
		usageError(fs, err)
		return err
	}
	return nil
}

// usageError prints err and a pointer to -h, not the whole help.
func usageError(fs *flag.FlagSet, err error) {
	fmt.Fprintf(fs.Output(), "%s: usage: %v\nRun '%s -h' for the flags.\n", fs.Name(), err, fs.Name())
}

// FlagError is a flag value a program rejects before any I/O, with a
// message that names what is wrong and what is allowed.
type FlagError struct {
	Flag string // the flag's name, without the dash
	Msg  string
}

// Error names the flag and what is wrong with its value.
func (e *FlagError) Error() string { return "-" + e.Flag + " " + e.Msg }

// The patterns of the service model (Smithy model
// com.amazonaws.sagemakerruntimehttp2), quoted in the messages of Check.
const (
	namePattern  = `^[a-zA-Z0-9](-*[a-zA-Z0-9])*$`
	pathPattern  = `^[A-Za-z0-9\-._]+(?:/[A-Za-z0-9\-._]+)*$`
	queryPattern = `key=value(&key=value)*, keys [a-zA-Z0-9][A-Za-z0-9_-]*, values of [A-Za-z0-9._~-] or %XX`
)

// Check checks the values of the connection flags against the service's
// rules before any I/O (the region's too, which the SDK checks in the same
// way). Unlike the SDK's validation (which never repeats
// a value: a query string may carry a token), its messages are for the
// person who typed the flags: they name the offending character, its
// offset and the allowed pattern, and recognize an endpoint ARN or URL
// given to -endpoint. The SDK still validates what is sent.
func (f *Flags) Check() error {
	if err := checkEndpoint(f.Endpoint); err != nil {
		return err
	}
	if f.Region != "" {
		if err := checkRegion(f.Region); err != nil {
			return err
		}
	}
	if f.TargetVariant != "" {
		if err := checkName("target-variant", "a production variant name", f.TargetVariant, 63); err != nil {
			return err
		}
	}
	if f.Path != "" {
		if err := checkPath(f.Path); err != nil {
			return err
		}
	}
	if f.Query != "" {
		if err := checkQuery(f.Query); err != nil {
			return err
		}
	}
	if f.EndpointURL != "" {
		u, err := url.Parse(f.EndpointURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return &FlagError{"endpoint-url", fmt.Sprintf("%q: want a URL such as https://localhost:8443", f.EndpointURL)}
		}
	}
	return nil
}

func checkEndpoint(v string) error {
	switch {
	case v == "":
		return nil
	case strings.HasPrefix(v, "arn:"):
		name := "NAME"
		if i := strings.LastIndex(v, ":endpoint/"); i >= 0 && v[i+len(":endpoint/"):] != "" {
			name = v[i+len(":endpoint/"):]
		}
		return &FlagError{"endpoint", fmt.Sprintf("%q is an ARN: pass the endpoint name, e.g. -endpoint %s", v, name)}
	case strings.Contains(v, "://"):
		return &FlagError{"endpoint", fmt.Sprintf("%q is a URL: pass the endpoint name with -endpoint, and a custom URL with -endpoint-url", v)}
	}
	return checkName("endpoint", "an endpoint name", v, 63)
}

// checkName checks a resource name (endpoint, variant) against namePattern.
func checkName(flagName, what, v string, maxLen int) error {
	rule := fmt.Sprintf("%s has letters, digits and hyphens, starts and ends with a letter or digit, and has at most %d characters (pattern %s)", what, maxLen, namePattern)
	if len(v) > maxLen {
		return &FlagError{flagName, fmt.Sprintf("%q is %d bytes long: %s", v, len(v), rule)}
	}
	for i, r := range v {
		if isAlnum(r) || (r == '-' && i > 0 && i < len(v)-1) {
			continue
		}
		return &FlagError{flagName, fmt.Sprintf("%q: %s at offset %d is not allowed there: %s", v, describeChar(r), i, rule)}
	}
	return nil
}

// checkRegion checks -region the way the SDK checks every region, with
// a custom endpoint or not: a lower-case DNS label.
func checkRegion(v string) error {
	const rule = "a region has lower-case letters, digits and hyphens, starts and ends with a letter or digit, e.g. -region us-west-2"
	if len(v) > 63 {
		return &FlagError{"region", fmt.Sprintf("%q is %d bytes long: %s", v, len(v), rule)}
	}
	for i, r := range v {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || (r == '-' && i > 0 && i < len(v)-1) {
			continue
		}
		return &FlagError{"region", fmt.Sprintf("%q: %s at offset %d is not allowed there: %s", v, describeChar(r), i, rule)}
	}
	return nil
}

func checkPath(v string) error {
	rule := fmt.Sprintf("a model invocation path has segments of letters, digits and - . _ joined by single slashes, at most 100 characters (pattern %s)", pathPattern)
	if len(v) > 100 {
		return &FlagError{"path", fmt.Sprintf("%q is %d bytes long: %s", v, len(v), rule)}
	}
	for i, r := range v {
		switch {
		case isAlnum(r) || r == '-' || r == '.' || r == '_':
		case r == '/' && i > 0 && i < len(v)-1 && v[i-1] != '/':
		default:
			what := describeChar(r)
			if r == '/' {
				what = "an empty segment ('/')"
			}
			return &FlagError{"path", fmt.Sprintf("%q: %s at offset %d: %s", v, what, i, rule)}
		}
	}
	return nil
}

// checkQuery checks a model query string. Its messages quote the
// offending character, never the value, which may hold a token.
func checkQuery(v string) error {
	rule := "want " + queryPattern + ", at most 2048 characters"
	if len(v) > 2048 {
		return &FlagError{"query", fmt.Sprintf("is %d bytes long: %s", len(v), rule)}
	}
	bad := func(i int, what string) error {
		return &FlagError{"query", fmt.Sprintf("has %s at offset %d: %s", what, i, rule)}
	}
	for _, pair := range splitOffsets(v, '&') {
		key, val, ok := strings.Cut(pair.s, "=")
		if !ok {
			return bad(pair.off+len(pair.s), "a pair without '='")
		}
		for i, r := range key {
			if !isAlnum(r) && (i == 0 || (r != '_' && r != '-')) {
				return bad(pair.off+i, describeChar(r)+" in a key")
			}
		}
		if key == "" {
			return bad(pair.off, "an empty key")
		}
		if val == "" {
			return bad(pair.off+len(key)+1, "an empty value")
		}
		base := pair.off + len(key) + 1
		for i := 0; i < len(val); {
			r, size := utf8.DecodeRuneInString(val[i:])
			switch {
			case isAlnum(r) || strings.ContainsRune("._~-", r):
				i += size
			case r == '%' && i+2 < len(val) && isHex(val[i+1]) && isHex(val[i+2]):
				i += 3
			case r == '%':
				return bad(base+i, "a '%' not followed by two hex digits")
			default:
				return bad(base+i, describeChar(r)+" in a value (percent-encode it, e.g. %20 for a space)")
			}
		}
	}
	return nil
}

type piece struct {
	s   string
	off int
}

// splitOffsets splits s at sep and returns the pieces with their offsets.
func splitOffsets(s string, sep byte) []piece {
	var out []piece
	off := 0
	for {
		i := strings.IndexByte(s[off:], sep)
		if i < 0 {
			return append(out, piece{s[off:], off})
		}
		out = append(out, piece{s[off : off+i], off})
		off += i + 1
	}
}

// describeChar names a character for a message: '_', a space, U+00E9 'é'.
func describeChar(r rune) string {
	switch {
	case r == ' ':
		return "a space"
	case r == utf8.RuneError:
		return "an invalid UTF-8 byte"
	case r < 0x20 || r == 0x7f:
		return fmt.Sprintf("the control character %U", r)
	case r > 0x7f:
		return fmt.Sprintf("the character %q (%U)", r, r)
	}
	return fmt.Sprintf("the character %q", r)
}

func isAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
