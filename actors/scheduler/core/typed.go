package core

import (
	"slices"
	"strings"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
)

// Typed jobs: a job with a job type and a number of steps runs at the
// rate the cluster's throughput table gives its type on the GPU's model
// (Config.Throughputs); its GPUs step it and report its progress in steps.
// The scheduler places it where the table gives it a rate and shares a
// GPU only as the table's pairs say (policy.Cluster.Throughputs); its
// work, kept progress and estimate count steps (events.Job.Work, Kept).

// checkTyped refuses a typed job a cluster with throughput table t cannot
// run: no table, a job type the table lacks, a scale factor (gpus) it has
// no rate for on any of its GPU models.
func checkTyped(spec *events.Job, t *model.ThroughputTable) *model.FieldError {
	if t == nil {
		return model.Errorf("job_type", "this cluster has no throughput table, so it cannot run typed jobs: start it with --throughputs FILE (Gavel's simulation_throughputs.json, or a table in its shape)")
	}
	types := t.JobTypes()
	if !slices.Contains(types, spec.JobType) {
		return model.Errorf("job_type", "%q is not in the throughput table; it has %d job types, e.g. %s", spec.JobType, len(types), strings.Join(types[:min(4, len(types))], ", "))
	}
	for _, m := range t.Models() {
		if len(spec.Models) > 0 && !slices.Contains(spec.Models, m) {
			continue
		}
		if rate, ok := t.Alone(m, spec.JobType, spec.GPUs); ok && rate > 0 {
			return nil
		}
	}
	among := t.Models()
	if len(spec.Models) > 0 {
		among = spec.Models
	}
	return model.Errorf("gpus", "the throughput table has no rate for %s on %d GPUs of any of %s", spec.JobType, spec.GPUs, strings.Join(among, ", "))
}

// aloneRate is how fast j runs on gs alone: its model's relative speed,
// or for a typed job the throughput table t's steps per second there.
func aloneRate(j *job, gs *gpuState, t *model.ThroughputTable) float64 {
	if !j.spec.Typed() || t == nil {
		return gs.model.Speed
	}
	rate, _ := t.Alone(gs.model.Name, j.spec.JobType, j.spec.GPUs)
	return rate
}
