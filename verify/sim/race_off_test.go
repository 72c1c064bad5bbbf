//go:build !race

package sim

// raceDetector is set when the tests run under -race.
const raceDetector = false
