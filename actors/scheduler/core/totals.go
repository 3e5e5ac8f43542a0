package core

import (
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
)

// totals are the scheduler's running totals: its own counts and what the
// schedulers before it came to.
type totals struct {
	counters
	// carried are the totals of the schedulers before this one (Config.
	// Carried, or the journal's); energyBase the energy of a previous
	// process's GPUs, energyFloor the most energy reported so far (the
	// view's sum dips while a restarted scheduler re-learns the GPUs).
	carried                 events.Totals
	energyBase, energyFloor float64
}

// counters are this scheduler's own counts.
type counters struct {
	completed, rejected, cancelled, preemptions int
	// deaths counts GPUs declared dead or reported down; lostJobs the
	// running jobs they took down; adopted the jobs re-learned from GPUs
	// after a restart; stale the messages ignored from dead incarnations;
	// nodeStrays the node holds freed for jobs that ran there no more.
	deaths, lostJobs, adopted, stale, nodeStrays int
}

// carry sets the totals this scheduler goes on from: its crashed
// predecessor's in this process, else a restored journal's (a restarted
// cluster). The journal's records count the completed, rejected and
// cancelled jobs themselves (restore), so those are not carried with one.
func (t *totals) carry(restored *durable.State, carried *events.Totals) {
	switch {
	case carried != nil:
		t.carried = *carried
		t.energyFloor = carried.EnergyJ
	case restored != nil:
		t.carried = restored.Totals
		t.energyBase = restored.Totals.EnergyJ
	}
	if restored != nil {
		t.carried.Completed, t.carried.Rejected, t.carried.Cancelled = 0, 0, 0
	}
}

// energy takes the energy the view's GPUs report now (energyJ): the total
// never falls below the most reported so far, on top of a previous
// process's.
func (t *totals) energy(energyJ float64) {
	t.energyFloor = max(t.energyFloor, t.energyBase+energyJ)
}

// totals are the running totals as reported (metrics): the carried ones
// plus this scheduler's own.
func (t *totals) totals() events.Totals {
	out := t.carried
	out.Completed += t.completed
	out.Rejected += t.rejected
	out.Cancelled += t.cancelled
	out.Preemptions += t.preemptions
	out.GPUDeaths += t.deaths
	out.JobsLost += t.lostJobs
	out.JobsAdopted += t.adopted
	out.StaleIgnored += t.stale
	out.EnergyJ = t.energyFloor
	return out
}
