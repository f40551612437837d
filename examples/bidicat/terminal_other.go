//go:build !linux

package main

// terminalWidth returns 0 (unknown) outside Linux; $COLUMNS or 80 columns
// are used instead.
func terminalWidth(any) int { return 0 }
