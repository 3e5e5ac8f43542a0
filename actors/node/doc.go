// Package node owns the node actor and the node host. The node actor owns
// its node's CPU and memory (reserve, commit, abort and release them for
// jobs, refusing what would oversubscribe them) and batches its GPUs'
// liveness into one heartbeat event per period. The Host runs one node: its
// node actor and a GPU actor per GPU, behind exactly two NATS
// subscriptions (<p>.gpu.<node>.> and <p>.node.<node>.ctl) whose messages
// it dispatches to the addressed actor's mailbox.
package node
