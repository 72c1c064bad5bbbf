//go:build race

package sim

// raceDetector is set when the tests run under -race, where the simulator
// runs about five times slower; see defaultSweepSeeds.
const raceDetector = true
