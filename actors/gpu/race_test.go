//go:build race

package gpu_test

// raceEnabled says the tests run under the race detector.
const raceEnabled = true
