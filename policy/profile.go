package policy

import "cmp"

// Profile is the extensions in force, one at each point (any number of
// filters), and the one place the scheduler runs them. For a job the
// points run in this order:
//
//  1. QueueSort: each scheduling pass takes the waiting jobs in Order.
//  2. Admit: AdmitSubmit when the job is submitted (a Refuse answers the
//     submitter: the job never exists); AdmitPlace each pass before the
//     job is tried (a Wait leaves it queued, the reason its pending
//     reason).
//  3. Filter: the built-in fit (VRAM, share, CPU and memory, models, pins,
//     holds) and every filter decide which GPUs the job may go on.
//  4. Score: Place ranks those GPUs (or their nodes) under the placement
//     policy, best first; the scheduler asks the GPUs in that order.
//  5. Preempt: for a job that fits nowhere and outranks a preemptible
//     running job, Victims chooses whom to stop (not when a round runs:
//     the round decides who runs).
//  6. Round: every round period, Stop names the running jobs to stop; the
//     pass that follows places the queue in order.
//
// Steps 3 and 4 are one call (Place) because the filters are bound to the
// cluster the policy ranks (Apply), so that a hold, a round's scratch
// placement and an explanation see the same filters.
type Profile struct {
	QueueSort QueueSort
	// Admit is nil when no limits are given: every job is admitted.
	Admit     Admit
	Filters   []Filter
	Placement Policy
	Preempt   Preempt
	// Round is nil when the scheduler runs no rounds.
	Round Round
}

// ProfileConfig names a profile's extensions as a command line gives
// them; "" is the point's default. Filters is a comma-separated list
// (ParseFilters). Admit is configured, not named (tenant limits); Rounds
// says whether rounds run at all.
type ProfileConfig struct {
	Placement, Queue, Filters, Preempt, Round string
	Admit                                     Admit
	Rounds                                    bool
}

// NewProfile looks up the extensions cfg names.
func NewProfile(cfg ProfileConfig) (*Profile, error) {
	p := &Profile{Admit: cfg.Admit}
	var err error
	if p.Placement, err = Lookup[Policy](cmp.Or(cfg.Placement, DefaultPolicy)); err != nil {
		return nil, err
	}
	if p.QueueSort, err = Lookup[QueueSort](cmp.Or(cfg.Queue, DefaultQueue)); err != nil {
		return nil, err
	}
	if p.Preempt, err = Lookup[Preempt](cmp.Or(cfg.Preempt, DefaultPreempt)); err != nil {
		return nil, err
	}
	if p.Filters, err = ParseFilters(cfg.Filters); err != nil {
		return nil, err
	}
	if cfg.Rounds {
		if p.Round, err = Lookup[Round](cmp.Or(cfg.Round, DefaultRound)); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Apply binds the profile's filters and its placement policy's compute
// bound to c, the cluster its Place ranks: after a profile is made and
// whenever its filters or placement policy change.
func (p *Profile) Apply(c *Cluster) {
	c.Filters = p.Filters
	c.ComputeBound = BindsCapacity(p.Placement)
}

// Order compares two waiting jobs under the queue order (step 1), then
// acceptance order: negative when a waits ahead of b.
func (p *Profile) Order(a, b *Queued) int { return Compare(p.QueueSort, a, b) }

// AdmitSubmit is step 2 at submission: a Refuse, or nil.
func (p *Profile) AdmitSubmit(j *AdmitJob) *Status {
	if p.Admit == nil {
		return nil
	}
	return p.Admit.Submit(j)
}

// AdmitPlace is step 2 in a pass: a Wait while the job may not be placed
// (its tenant holds held), or nil.
func (p *Profile) AdmitPlace(j *AdmitJob, held Usage) *Status {
	if p.Admit == nil {
		return nil
	}
	return p.Admit.Place(j, held)
}

// Place is steps 3 and 4: where r may go on c, best first (at most
// MaxCandidates; none when it fits nowhere now).
func (p *Profile) Place(c *Cluster, r *Request) []Placement { return Place(c, r, p.Placement) }

// Victims is step 5: the preemption that lets r fit on c, if there is
// one.
func (p *Profile) Victims(c *Cluster, r *Request) (Preemption, bool) { return p.Preempt.Victims(c, r) }

// Stop is step 6: the running jobs the round stops (none when no round
// runs). jobs are every running and waiting job in queue order.
func (p *Profile) Stop(c *Cluster, jobs []RoundJob) []string {
	if p.Round == nil {
		return nil
	}
	return p.Round.Stop(c, jobs, p.Placement)
}
