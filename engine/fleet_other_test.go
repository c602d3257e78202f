//go:build !unix

package engine

// fleetHost is the fleet simulation's host process, which runs where the
// simulation does: on unix (it kills process groups).
func fleetHost(string) { panic("the fleet simulation runs on unix only") }
