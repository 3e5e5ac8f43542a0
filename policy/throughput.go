package policy

// ThroughputRule names the throughput table's rule where it is what keeps
// a job off a GPU (Cluster.Throughputs): in a pending reason, in Why.
const ThroughputRule = "throughput table"

// throughputAllows is the throughput table's rule for r on g: a typed job
// only where the table gives its type a positive rate at its scale factor
// on g's model, and a GPU shared only by what the table measured — two
// typed jobs of the same scale factor whose pair it has on g's model.
// An untyped job never shares a GPU with a typed one (the table has no
// rate for that pair), and a third job never joins a typed pair.
func (c *Cluster) throughputAllows(g *GPU, r *Request) bool {
	t := c.Throughputs
	if r.JobType != "" {
		if rate, ok := t.Alone(g.Model, r.JobType, r.GPUs); !ok || rate <= 0 {
			return false
		}
	}
	others, typed := 0, 0
	var partner *Share
	for i := range g.Shares {
		sh := &g.Shares[i]
		if sh.JobID == r.JobID {
			continue
		}
		others++
		if sh.JobType != "" {
			typed++
			partner = sh
		}
	}
	switch {
	case r.JobType == "" && typed == 0:
		return true // untyped jobs share as they always do
	case others == 0:
		return true
	case r.JobType == "" || others > 1 || typed != 1 || partner.GPUs != r.GPUs:
		return false
	}
	_, ok := t.Packed(g.Model, r.JobType, partner.JobType, r.GPUs)
	return ok
}
