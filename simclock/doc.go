// Package simclock owns simulated time. Every event carries simulated time.
// The live cluster runs a Scaled clock (simulated seconds per wall second);
// a Virtual clock runs the same actors as fast as the machine allows,
// jumping to the next due timer once the simulation has settled, so a
// seeded run gives the same result on any machine. Actors mark their work
// with Hold and Release so that a virtual clock knows when they are done;
// timers due at one instant fire in Phases (events, decisions,
// observations). Policies never read a clock: actors pass them the time.
package simclock
