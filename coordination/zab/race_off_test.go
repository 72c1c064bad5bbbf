//go:build !race

package zab

// raceDetector is set when the tests run under -race.
const raceDetector = false
