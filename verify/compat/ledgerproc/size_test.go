//go:build !race

package ledgerproc

// killEntries is what the Go writer of TestBookieKillUnderLoad appends.
// Under the race detector it is smaller: see size_race_test.go.
const killEntries = 100_000
