package eventstream

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestAppendAmzDate: the signing date and time are what
// time.AppendFormat writes, for times across the four-digit years, at
// the edges of days, months and leap years, and outside 0–9999.
func TestAppendAmzDate(t *testing.T) {
	t.Parallel()
	times := []time.Time{
		time.Date(2024, 2, 29, 23, 59, 59, 999999999, time.UTC),
		time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 12, 31, 12, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 27, 20, 7, 3, 0, time.FixedZone("X", -7*3600)).UTC(),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		times = append(times, time.Unix(r.Int64N(253402300800), 0).UTC()) // 1970 to 9999
	}
	for _, tm := range times {
		for _, withTime := range []bool{true, false} {
			layout := "20060102"
			if withTime {
				layout = "20060102T150405Z"
			}
			want := tm.AppendFormat([]byte("x"), layout)
			if got := appendAmzDate([]byte("x"), tm, withTime); string(got) != string(want) {
				t.Fatalf("appendAmzDate(%v, %v) = %q, want %q", tm, withTime, got, want)
			}
		}
	}
}
