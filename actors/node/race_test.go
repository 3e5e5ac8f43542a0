//go:build race

package node

// raceEnabled says the tests run under the race detector.
const raceEnabled = true
