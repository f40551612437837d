package bidi

import "strconv"

// Length limits from the service model.
const (
	maxEndpointNameLen        = 63
	maxTargetVariantLen       = 63
	maxModelInvocationPathLen = 100
	maxModelQueryStringLen    = 2048
)

// validate checks in against the model's constraints. It never includes
// the field values in the error (a query string may carry tokens).
func (in *OpenInput) validate() error {
	if in == nil {
		return &InputValidationError{Field: "OpenInput", Message: "input is nil"}
	}
	if in.EndpointName == "" {
		return &InputValidationError{Field: "EndpointName", Message: "required field is empty"}
	}
	if err := checkField("EndpointName", in.EndpointName, maxEndpointNameLen, matchResourceName); err != nil {
		return err
	}
	if in.TargetVariant != "" {
		if err := checkField("TargetVariant", in.TargetVariant, maxTargetVariantLen, matchResourceName); err != nil {
			return err
		}
	}
	if in.ModelInvocationPath != "" {
		if err := checkField("ModelInvocationPath", in.ModelInvocationPath, maxModelInvocationPathLen, matchInvocationPath); err != nil {
			return err
		}
	}
	if in.ModelQueryString != "" {
		if err := checkField("ModelQueryString", in.ModelQueryString, maxModelQueryStringLen, matchQueryString); err != nil {
			return err
		}
	}
	return nil
}

// checkField applies a length limit and a matcher. match returns the byte
// offset of the first violation, or -1 when s matches.
func checkField(field, s string, maxLen int, match func(string) int) error {
	if len(s) > maxLen {
		return &InputValidationError{
			Field:   field,
			Message: "length " + strconv.Itoa(len(s)) + " exceeds maximum " + strconv.Itoa(maxLen),
		}
	}
	if off := match(s); off >= 0 {
		return &InputValidationError{
			Field:   field,
			Message: "invalid character or structure at offset " + strconv.Itoa(off),
		}
	}
	return nil
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// matchResourceName matches ^[a-zA-Z0-9](-*[a-zA-Z0-9])*$: letters, digits
// and hyphens, first and last a letter or digit. (The model's pattern has
// no trailing $; anchoring it is stricter and matches every name SageMaker
// can create.)
func matchResourceName(s string) int {
	if s == "" {
		return 0
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isAlnum(c) {
			continue
		}
		if c != '-' || i == 0 {
			return i
		}
	}
	if s[len(s)-1] == '-' {
		return len(s) - 1
	}
	return -1
}

// matchInvocationPath matches ^[A-Za-z0-9\-._]+(?:/[A-Za-z0-9\-._]+)*$.
func matchInvocationPath(s string) int {
	if s == "" {
		return 0
	}
	segLen := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isAlnum(c) || c == '-' || c == '.' || c == '_':
			segLen++
		case c == '/' && segLen > 0:
			segLen = 0
		default:
			return i
		}
	}
	if segLen == 0 {
		return len(s) - 1
	}
	return -1
}

// matchQueryString matches
// ^K=V(?:&K=V)*$ with K = [a-zA-Z0-9][A-Za-z0-9_-]* and
// V = (?:[A-Za-z0-9._~\-]|%[0-9A-Fa-f]{2})+.
func matchQueryString(s string) int {
	i := 0
	for {
		// key
		if i >= len(s) || !isAlnum(s[i]) {
			return min(i, len(s)-1)
		}
		i++
		for i < len(s) && (isAlnum(s[i]) || s[i] == '_' || s[i] == '-') {
			i++
		}
		if i >= len(s) || s[i] != '=' {
			return min(i, len(s)-1)
		}
		i++
		// value
		start := i
		for i < len(s) {
			c := s[i]
			if isAlnum(c) || c == '.' || c == '_' || c == '~' || c == '-' {
				i++
				continue
			}
			if c == '%' {
				if i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
					i += 3
					continue
				}
				return i
			}
			break
		}
		if i == start {
			return min(i, len(s)-1)
		}
		if i == len(s) {
			return -1
		}
		if s[i] != '&' {
			return i
		}
		i++
	}
}
