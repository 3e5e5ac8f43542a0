// Package offload runs an actor's steps on helper goroutines while the
// actor's own goroutine waits, so that an actor that only waits keeps the
// runtime's smallest stack.
//
// The work of a step (JSON, the bus, logging) grows a goroutine's stack to
// 4–8 KiB, and the runtime never shrinks a stack back below 4 KiB:
// runtime.shrinkstack halves a stack only when less than a quarter of it
// is in use, counting the 800 bytes it keeps for nosplit functions, so a
// 4 KiB stack would need under 224 bytes of frames, and a goroutine parked
// in a select holds more than that. An actor whose goroutine only waits
// stays on the 2 KiB it started with; the helpers, as many as steps run at
// once, hold the deep stacks. At 100,000 GPU actors that is 200 MB.
//
// An actor that uses it must also wait on nothing that runs code on its
// stack: a time.Timer's or time.Ticker's own channel runs the timer heap's
// code in the select of whoever waits on it, which does not fit; a plain
// channel that a timer's function sends to does.
package offload
