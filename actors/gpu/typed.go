package gpu

import (
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
)

// Typed jobs (a job type and steps, events.Job.JobType): this GPU runs
// one at the rate its throughput table gives the job's type at its scale
// factor (its GPUs) on this GPU's model — alone, or, while it shares the
// GPU with another typed job, the pair's measured rate. Its progress and
// work count steps; its rate is steps per second. The scheduler shares a
// GPU only as the table's pairs allow (policy.Cluster.Throughputs); a
// reservation that would break that rule is refused here too.

// jobType is the share's job type and scale factor ("" for an untyped job).
func (s *share) jobType() (string, int) {
	if s.job.Spec == nil || !s.job.Spec.Typed() {
		return "", 0
	}
	return s.job.Spec.JobType, s.job.Spec.GPUs
}

// typedRate is a running typed share's steps per second now: packed with
// the other running typed share of the same scale factor when the table
// has the pair, alone otherwise. ok is false for an untyped share.
func (a *Actor) typedRate(s *share) (rate float64, ok bool) {
	jt, scale := s.jobType()
	t := a.cfg.Throughputs
	if jt == "" || t == nil {
		return 0, false
	}
	for _, o := range a.shares {
		if o == s || !o.running {
			continue
		}
		if ot, oscale := o.jobType(); ot != "" && oscale == scale {
			if rates, found := t.Packed(a.cfg.Model.Name, jt, ot, scale); found {
				return rates[0], true
			}
		}
	}
	rate, _ = t.Alone(a.cfg.Model.Name, jt, scale)
	return rate, true
}

// refuseTyped says why this GPU cannot take the typed job of assignment
// j ("" when it can): no table, no positive rate for it here, or a typed
// job already here that the table does not pair it with.
func (a *Actor) refuseTyped(j *events.Assignment) (reason string, fe *model.FieldError) {
	if j.Spec == nil || !j.Spec.Typed() {
		for _, o := range a.shares {
			if ot, _ := o.jobType(); ot != "" {
				return "this GPU runs the typed job " + o.id + " (" + ot + "), which shares a GPU only with a typed job the throughput table pairs it with", nil
			}
		}
		return "", nil
	}
	t := a.cfg.Throughputs
	if t == nil {
		return "", model.Errorf("job.spec.job_type", "this GPU runs no typed jobs (the cluster was started without a throughput table)")
	}
	jt, scale := j.Spec.JobType, j.Spec.GPUs
	if rate, ok := t.Alone(a.cfg.Model.Name, jt, scale); !ok || rate <= 0 {
		return "the throughput table gives " + jt + " no rate on " + a.cfg.Model.Name, nil
	}
	for _, o := range a.shares {
		ot, oscale := o.jobType()
		if ot == "" || oscale != scale {
			return "this GPU runs " + o.id + ", which the throughput table does not pair with " + jt, nil
		}
		if _, ok := t.Packed(a.cfg.Model.Name, jt, ot, scale); !ok {
			return "the throughput table has no packed rate for " + jt + " with " + ot + " on " + a.cfg.Model.Name, nil
		}
	}
	if len(a.shares) > 1 {
		return "this GPU runs a packed pair of typed jobs already", nil
	}
	return "", nil
}
