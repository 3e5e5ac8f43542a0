// Package bench measures gpusched's performance and prints it as one table
// (`cluster bench`, `task bench`): the placement policies' decision cost as
// the cluster grows, placements per second and submit→placed latency
// through the whole path (client → NATS → scheduler → node and GPU actors
// → reply), the raw bus beside them for the ratio, GPU actors' memory and
// start-up, event fan-out to observers, and the openb replay live and
// offline, and the ceiling: a placement's messages alone, with no work
// behind them (Ceiling). The same functions sit under `go test -bench` in
// this package.
// Every figure comes from the run that prints it; nothing is a constant.
package bench
