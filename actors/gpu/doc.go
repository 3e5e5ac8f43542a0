// Package gpu owns the GPU actor: one goroutine per GPU, the source of
// truth for what runs on it. It owns the GPU's VRAM layout (refusing what
// would oversubscribe it: the simulated OOM, or "fragmented" when free VRAM
// is split into holes too small), its jobs and their progress on the
// simulation clock, the slowdown of co-located jobs whose summed util
// exceeds 100%, and the energy drawn. It answers control requests
// (reserve, commit, abort, preempt, release, describe) delivered to its
// mailbox by the node host, and publishes a status event on every change.
// Uncommitted reservations expire by themselves after their TTL (wall time).
package gpu
