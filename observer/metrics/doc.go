// Package metrics owns the Prometheus exposition of a cluster: the
// scheduler's periodic metrics event and each GPU's last status become
// gauges and counters with the conventional names and base units
// (seconds, bytes, joules, ratios 0..1), and the wall time from a job's
// submission to its placement a histogram.
package metrics
