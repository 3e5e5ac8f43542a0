// Package report owns observer report: from a recorded run (observer
// record's JSON lines), a cluster compare output folder (jobs-<policy>.csv,
// series-<policy>.csv) or a cluster replay output folder (the FGD
// protocol's <workload>_<policy>_<seed>.csv curves) it writes a summary
// (summary.txt, summary.json), the per-job CSV and PNG plots: utilisation,
// fragmentation and queue length over time, the JCT distribution by
// priority, policies side by side for a comparison, and per workload the
// allocation and fragmentation curves of each policy next to the published
// ones for an FGD replay.
package report
