// Package pyrand is CPython's random.Random, bit for bit: the MT19937
// generator seeded the way CPython seeds it from an integer
// (init_by_array over the integer's 32-bit words), and the draws the
// reproduced simulators use — random, uniform, getrandbits, randrange,
// shuffle and sample. Go's math/rand draws other numbers from the same
// seed, so a published run that used Python's generator is only
// reproduced with this one. Gavel's simulator (../shared/traces/gavel,
// MODEL.md §0) and PAL's profile draw (seed 42) use it.
package pyrand
