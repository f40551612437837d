package bidi

import (
	"errors"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/smithy-go"
)

func TestValidateOpenInput(t *testing.T) {
	name63 := "a" + strings.Repeat("-b", 31)         // 63 chars
	path100 := strings.Repeat("abcd/", 19) + "abcde" // 100 chars
	query2048 := "k=" + strings.Repeat("v", 2046)    // 2048 chars
	queryPct := "a=%2F%2f&B_-9=x.y~z-&c=" + "%41"    // escapes
	cases := []struct {
		name  string
		in    OpenInput
		field string // "" = valid
	}{
		{"minimal", OpenInput{EndpointName: "e"}, ""},
		{"typical", OpenInput{EndpointName: "my-endpoint-1", TargetVariant: "AllTraffic", ModelInvocationPath: "v1/chat/completions", ModelQueryString: "model=llama&stream=true"}, ""},
		{"name at limit", OpenInput{EndpointName: name63}, ""},
		{"name over limit", OpenInput{EndpointName: name63 + "c"}, "EndpointName"},
		{"name empty", OpenInput{}, "EndpointName"},
		{"name double hyphen", OpenInput{EndpointName: "a--b"}, ""},
		{"name leading hyphen", OpenInput{EndpointName: "-ab"}, "EndpointName"},
		{"name trailing hyphen", OpenInput{EndpointName: "ab-"}, "EndpointName"},
		{"name underscore", OpenInput{EndpointName: "a_b"}, "EndpointName"},
		{"name slash", OpenInput{EndpointName: "a/b"}, "EndpointName"},
		{"name dot", OpenInput{EndpointName: "a.b"}, "EndpointName"},
		{"name space", OpenInput{EndpointName: "a b"}, "EndpointName"},
		{"name unicode", OpenInput{EndpointName: "ä"}, "EndpointName"},
		{"name single hyphen", OpenInput{EndpointName: "-"}, "EndpointName"},
		{"variant at limit", OpenInput{EndpointName: "e", TargetVariant: name63}, ""},
		{"variant over limit", OpenInput{EndpointName: "e", TargetVariant: name63 + "c"}, "TargetVariant"},
		{"variant bad", OpenInput{EndpointName: "e", TargetVariant: "v_1"}, "TargetVariant"},
		{"path at limit", OpenInput{EndpointName: "e", ModelInvocationPath: path100}, ""},
		{"path over limit", OpenInput{EndpointName: "e", ModelInvocationPath: path100 + "x"}, "ModelInvocationPath"},
		{"path single segment", OpenInput{EndpointName: "e", ModelInvocationPath: "invocations"}, ""},
		{"path dots", OpenInput{EndpointName: "e", ModelInvocationPath: "a/../b._-"}, ""},
		{"path leading slash", OpenInput{EndpointName: "e", ModelInvocationPath: "/v1"}, "ModelInvocationPath"},
		{"path trailing slash", OpenInput{EndpointName: "e", ModelInvocationPath: "v1/"}, "ModelInvocationPath"},
		{"path double slash", OpenInput{EndpointName: "e", ModelInvocationPath: "v1//x"}, "ModelInvocationPath"},
		{"path only slash", OpenInput{EndpointName: "e", ModelInvocationPath: "/"}, "ModelInvocationPath"},
		{"path query char", OpenInput{EndpointName: "e", ModelInvocationPath: "v1?x=1"}, "ModelInvocationPath"},
		{"path tilde", OpenInput{EndpointName: "e", ModelInvocationPath: "~x"}, "ModelInvocationPath"},
		{"query at limit", OpenInput{EndpointName: "e", ModelQueryString: query2048}, ""},
		{"query over limit", OpenInput{EndpointName: "e", ModelQueryString: query2048 + "v"}, "ModelQueryString"},
		{"query escapes", OpenInput{EndpointName: "e", ModelQueryString: queryPct}, ""},
		{"query no value", OpenInput{EndpointName: "e", ModelQueryString: "a="}, "ModelQueryString"},
		{"query no equals", OpenInput{EndpointName: "e", ModelQueryString: "a"}, "ModelQueryString"},
		{"query empty key", OpenInput{EndpointName: "e", ModelQueryString: "=v"}, "ModelQueryString"},
		{"query key starts with underscore", OpenInput{EndpointName: "e", ModelQueryString: "_a=v"}, "ModelQueryString"},
		{"query trailing amp", OpenInput{EndpointName: "e", ModelQueryString: "a=b&"}, "ModelQueryString"},
		{"query double amp", OpenInput{EndpointName: "e", ModelQueryString: "a=b&&c=d"}, "ModelQueryString"},
		{"query short escape", OpenInput{EndpointName: "e", ModelQueryString: "a=%4"}, "ModelQueryString"},
		{"query bad escape", OpenInput{EndpointName: "e", ModelQueryString: "a=%zz"}, "ModelQueryString"},
		{"query space", OpenInput{EndpointName: "e", ModelQueryString: "a=b c"}, "ModelQueryString"},
		{"query plus", OpenInput{EndpointName: "e", ModelQueryString: "a=b+c"}, "ModelQueryString"},
		{"query two equals", OpenInput{EndpointName: "e", ModelQueryString: "a=b=c"}, "ModelQueryString"},
		{"query leading amp", OpenInput{EndpointName: "e", ModelQueryString: "&a=b"}, "ModelQueryString"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.in.validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("validate() = %v, want nil", err)
				}
				return
			}
			var ive *InputValidationError
			if !errors.As(err, &ive) {
				t.Fatalf("validate() = %v, want *InputValidationError", err)
			}
			if ive.Field != tc.field {
				t.Fatalf("Field = %q, want %q (%v)", ive.Field, tc.field, err)
			}
			var api smithy.APIError
			if !errors.As(err, &api) || api.ErrorCode() != "InputValidationError" || api.ErrorFault() != smithy.FaultClient {
				t.Fatalf("not a client-fault InputValidationError APIError: %v", err)
			}
			if !strings.Contains(err.Error(), tc.field) || !strings.HasPrefix(err.Error(), "bidi: ") {
				t.Fatalf("Error() = %q, want prefix and field name", err)
			}
		})
	}
}

func TestValidateNilInputAndNoValueInError(t *testing.T) {
	var in *OpenInput
	var ive *InputValidationError
	if err := in.validate(); !errors.As(err, &ive) {
		t.Fatalf("nil input: %v", err)
	}
	in = &OpenInput{EndpointName: "e", ModelQueryString: "token=SECRETTOKEN value"}
	err := in.validate()
	if err == nil {
		t.Fatal("want error")
	}
	if strings.Contains(err.Error(), "SECRETTOKEN") {
		t.Fatalf("error repeats the field value: %q", err)
	}
}

// TestValidateMatchersAgreeWithRegexp checks the hand-written matchers
// against the model's patterns (EndpointName's anchored at the end) on
// random strings over an alphabet that exercises every branch.
func TestValidateMatchersAgreeWithRegexp(t *testing.T) {
	cases := []struct {
		name     string
		re       *regexp.Regexp
		match    func(string) int
		alphabet string
	}{
		{"resource name", regexp.MustCompile(`^[a-zA-Z0-9](-*[a-zA-Z0-9])*$`), matchResourceName, "aZ9-_./ "},
		{"invocation path", regexp.MustCompile(`^[A-Za-z0-9\-._]+(?:/[A-Za-z0-9\-._]+)*$`), matchInvocationPath, "aZ9-._/~?"},
		{"query string", regexp.MustCompile(`^[a-zA-Z0-9][A-Za-z0-9_-]*=(?:[A-Za-z0-9._~\-]|%[0-9A-Fa-f]{2})+(?:&[a-zA-Z0-9][A-Za-z0-9_-]*=(?:[A-Za-z0-9._~\-]|%[0-9A-Fa-f]{2})+)*$`), matchQueryString, "aF9_-=&%.~+ g"},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range cases {
		matched := 0
		for i := 0; i < 30000; i++ {
			n := 1 + rng.IntN(12)
			b := make([]byte, n)
			for j := range b {
				b[j] = tc.alphabet[rng.IntN(len(tc.alphabet))]
			}
			s := string(b)
			want := tc.re.MatchString(s)
			off := tc.match(s)
			if got := off < 0; got != want {
				t.Fatalf("%s: %q: matcher says %v (offset %d), regexp says %v", tc.name, s, got, off, want)
			}
			if off >= len(s) {
				t.Fatalf("%s: %q: offset %d out of range", tc.name, s, off)
			}
			if want {
				matched++
			}
		}
		if matched < 100 {
			t.Errorf("%s: only %d random strings matched; the comparison is too weak", tc.name, matched)
		}
	}
}
