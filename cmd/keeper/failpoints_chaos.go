//go:build chaos

package main

// loadFailpoints applies the fault file's "failpoint …" lines.
// (Placeholder until failpoints land.)
func loadFailpoints(lines []string) error { return nil }
