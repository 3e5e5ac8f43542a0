// Package simclock owns simulated time. Every event carries simulated time;
// the live cluster runs a Scaled clock (simulated seconds per wall second),
// and a virtual clock that jumps to the next due event will implement the
// same Clock interface. Policies never read a clock: actors pass them the time.
package simclock
