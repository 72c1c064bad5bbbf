//go:build chaos

package main

// loadClock applies the fault file's "clock …" lines. (Placeholder until
// the skewable clock lands.)
func loadClock(lines []string) error { return nil }
