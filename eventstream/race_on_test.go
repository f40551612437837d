//go:build race

package eventstream

// raceEnabled reports whether the race detector, which adds allocations of
// its own, is on.
const raceEnabled = true
