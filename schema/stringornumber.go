package schema

import (
	"encoding/json"
	"errors"
	"strconv"
)

// StringOrNumber is a JSON string that servers sometimes send as a number:
// seed 002's top_logprobs[].token is a number, and vLLM's stop_reason is a
// stop string or a stop token ID. A number is kept as its literal text
// (for example "-4.499478340148926" or "128001"); null decodes as "". It
// encodes as a JSON string.
type StringOrNumber string

// UnmarshalJSON accepts a string, a number or null.
func (s *StringOrNumber) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) == 0:
		return errors.New("schema: empty value for a string or number")
	case b[0] == '"':
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = StringOrNumber(v)
	case string(b) == "null":
		*s = ""
	case b[0] == '-' || '0' <= b[0] && b[0] <= '9':
		*s = StringOrNumber(b)
	default:
		return errors.New("schema: want a string or a number, got " + quoteStart(b))
	}
	return nil
}

// quoteStart quotes the start of b for an error message.
func quoteStart(b []byte) string {
	const max = 32
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "..."
	}
	return strconv.Quote(string(b))
}
