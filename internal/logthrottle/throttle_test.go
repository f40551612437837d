package logthrottle

import (
	"fmt"
	"testing"
	"time"
)

func TestAllowBurstThenCount(t *testing.T) {
	var th Throttle
	t0 := time.Unix(1000, 0)
	for i := range Burst {
		if ok, n := th.Allow("a", t0); !ok || n != 0 {
			t.Fatalf("line %d: allowed %v, suppressed %d; want allowed, 0", i, ok, n)
		}
	}
	for i := range 3 {
		if ok, _ := th.Allow("a", t0.Add(time.Second)); ok {
			t.Fatalf("line %d over the burst was allowed", Burst+i)
		}
	}
	if ok, _ := th.Allow("b", t0); !ok {
		t.Fatal("another kind was held back by the first kind's burst")
	}
	ok, n := th.Allow("a", t0.Add(Window))
	if !ok || n != 3 {
		t.Fatalf("first line of the next window: allowed %v, suppressed %d; want allowed, 3", ok, n)
	}
	if _, n := th.Allow("a", t0.Add(Window)); n != 0 {
		t.Fatalf("the dropped count was reported twice (%d)", n)
	}
}

func TestAllowBoundsKinds(t *testing.T) {
	var th Throttle
	now := time.Unix(1000, 0)
	for i := range 10 * maxKinds {
		th.Allow(fmt.Sprint(i), now)
	}
	if n := len(th.kinds); n > maxKinds {
		t.Fatalf("%d kinds remembered, want at most %d", n, maxKinds)
	}
}
