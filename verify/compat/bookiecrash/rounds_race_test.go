//go:build race

package bookiecrash

// defaultRounds is the crash rounds of a run under the race detector. The
// detector slows the test's clients and metadata server several times over,
// so 20 rounds would take about 90 s; 12 keep the package near 55 s and
// still kill the bookie in every phase many times over (-rounds overrides).
const defaultRounds = 12
