//go:build !race

package zmtp

// raceEnabled: see newConn.
const raceEnabled = false
