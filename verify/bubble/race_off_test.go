//go:build !race

package bubble

// raceDetector is set under -race, where a seed runs about five times
// slower; see defaultSeeds.
const raceDetector = false
