//go:build !race

package bookiecrash

// defaultRounds is the crash rounds of a run (-rounds overrides; -short
// runs 3). Under the race detector it is smaller: see rounds_race_test.go.
const defaultRounds = 20
