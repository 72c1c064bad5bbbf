//go:build race

package ledgerproc

// killEntries is what the Go writer of TestBookieKillUnderLoad appends
// under the race detector, which slows this process's writer, tailer and
// readers (the keeper processes are built without it) several times over:
// 100,000 entries would take the package past a minute; 20,000 still
// spread the kill and the ensemble change over thousands of pending adds.
const killEntries = 20_000
