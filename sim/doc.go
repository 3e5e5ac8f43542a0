// Package sim runs time-driven simulations on a virtual clock: the same
// actors and bus as the live cluster, a workload (the generated mix or a
// trace) arriving at its times, and an in-process observer that collects
// every job's outcome and the cluster's metrics over time. It owns the
// per-job results and time series (and their CSV files), the summary a
// comparison prints (pure functions over the results), and the trace
// formats a timed replay reads: openb pods and JSON-lines jobs.
package sim
