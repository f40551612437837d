//go:build !race

package eventstream

const raceEnabled = false
