//go:build race

package eventstream

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts of pooled paths are not meaningful under -race.
const raceEnabled = true
