package auth

import (
	"fmt"
	"strings"
	"time"

	"github.com/gpusched/gpusched/model"
)

// EventBudget is how many bytes of events one node's credentials may
// publish: Burst at once, refilled at Rate a second (a token bucket). A
// node that passes it is cut off for CoolOff, doubled at each further cut
// (at most MaxCoolOff). Off turns budgets off.
type EventBudget struct {
	Rate    model.Bytes
	Burst   model.Bytes
	CoolOff time.Duration
	Off     bool
}

// Default event budget. node-0 of the reference cluster (6 GPUs)
// published about 2.5 KB/s of events at --speed 3600 --rate 200 and
// 60 KB/s at --speed 100000 --rate 5000 (measured): 256 KiB/s is four
// times the busiest run measured. The burst, 16 MiB, is 1/64 of the event stream's default
// size: what one node can take of the history before it is cut off.
const (
	DefaultEventRate  = 256 << 10
	DefaultEventBurst = 16 << 20
	DefaultCoolOff    = time.Minute
	// MaxCoolOff bounds the doubling: a node readmitted every hour at
	// most costs the history one burst an hour.
	MaxCoolOff = time.Hour
)

// DefaultEventBudget is the budget `cluster --auth` applies unless told
// otherwise.
func DefaultEventBudget() EventBudget {
	return EventBudget{Rate: DefaultEventRate, Burst: DefaultEventBurst, CoolOff: DefaultCoolOff}
}

// ParseEventBudget reads "RATE/s,BURST" ("256KiB/s,16MiB"), optionally
// ",cool-off=DURATION", or "off".
func ParseEventBudget(s string) (EventBudget, error) {
	if strings.TrimSpace(s) == "off" {
		return EventBudget{Off: true}, nil
	}
	b := DefaultEventBudget()
	parts := strings.Split(s, ",")
	if len(parts) < 2 || len(parts) > 3 {
		return b, fmt.Errorf("%q: want RATE/s,BURST[,cool-off=DURATION] (e.g. 256KiB/s,16MiB) or off", s)
	}
	rate, ok := strings.CutSuffix(strings.TrimSpace(parts[0]), "/s")
	if !ok {
		return b, fmt.Errorf("%q: the rate %q must end in /s (e.g. 256KiB/s)", s, parts[0])
	}
	var err error
	if b.Rate, err = model.ParseBytes(rate); err != nil || b.Rate <= 0 {
		return b, fmt.Errorf("%q: the rate %q is not a size a second (e.g. 256KiB/s)", s, parts[0])
	}
	if b.Burst, err = model.ParseBytes(strings.TrimSpace(parts[1])); err != nil || b.Burst <= 0 {
		return b, fmt.Errorf("%q: the burst %q is not a size (e.g. 16MiB)", s, parts[1])
	}
	if len(parts) == 3 {
		v, ok := strings.CutPrefix(strings.TrimSpace(parts[2]), "cool-off=")
		d, err := time.ParseDuration(v)
		if !ok || err != nil || d <= 0 {
			return b, fmt.Errorf("%q: %q: want cool-off=DURATION (e.g. cool-off=5m)", s, parts[2])
		}
		b.CoolOff = d
	}
	return b, nil
}

// String is the budget as ParseEventBudget reads it.
func (b EventBudget) String() string {
	if b.Off {
		return "off"
	}
	return fmt.Sprintf("%s/s,%s,cool-off=%s", b.Rate.Exact(), b.Burst.Exact(), b.CoolOff)
}

// Budgets keeps each node's event budget. It is plain state over the
// times it is given (no clock, no locks): its owner serialises calls.
type Budgets struct {
	budget EventBudget
	nodes  map[string]*bucket
}

type bucket struct {
	// left is the bytes the node may still publish, as of at.
	left float64
	at   time.Time
	// cuts counts the node's cut-offs (each doubles the next cool-off).
	cuts int
	// out says the node is cut off: nothing is charged until Readmit.
	out bool
}

// NewBudgets keeps budget for every node.
func NewBudgets(budget EventBudget) *Budgets {
	return &Budgets{budget: budget, nodes: map[string]*bucket{}}
}

// Charge counts size bytes of node's events published at now, and says
// whether the node has just passed its budget: it is then cut off, for
// the cool-off returned, and further charges return false until Readmit.
func (b *Budgets) Charge(node string, size int, now time.Time) (cut bool, coolOff time.Duration) {
	if b.budget.Off {
		return false, 0
	}
	k := b.nodes[node]
	if k == nil {
		k = &bucket{left: float64(b.budget.Burst), at: now}
		b.nodes[node] = k
	}
	if k.out {
		return false, 0
	}
	if dt := now.Sub(k.at).Seconds(); dt > 0 {
		k.left = min(float64(b.budget.Burst), k.left+dt*float64(b.budget.Rate))
		k.at = now
	}
	k.left -= float64(size)
	if k.left >= 0 {
		return false, 0
	}
	k.out = true
	k.cuts++
	coolOff = b.budget.CoolOff
	for i := 1; i < k.cuts && coolOff < MaxCoolOff; i++ {
		coolOff *= 2
	}
	return true, min(coolOff, MaxCoolOff)
}

// Cuts counts node's cut-offs so far.
func (b *Budgets) Cuts(node string) int {
	if k := b.nodes[node]; k != nil {
		return k.cuts
	}
	return 0
}

// Readmit ends node's cut-off at now with a full budget.
func (b *Budgets) Readmit(node string, now time.Time) {
	if k := b.nodes[node]; k != nil {
		k.out, k.left, k.at = false, float64(b.budget.Burst), now
	}
}

// Without is f without the users who act as the nodes named in cut: the
// server configuration that shuts those nodes out.
func (f *File) Without(cut map[string]bool) *File {
	out := &File{}
	for _, u := range f.Users {
		if u.Role == Node && cut[u.Node] {
			continue
		}
		out.Users = append(out.Users, u)
	}
	return out
}

// Nodes are the nodes the file's node users act as.
func (f *File) Nodes() map[string]bool {
	out := map[string]bool{}
	for _, u := range f.Users {
		if u.Role == Node {
			out[u.Node] = true
		}
	}
	return out
}
