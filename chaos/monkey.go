package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/simclock"
)

// MonkeySpec is what `cluster --chaos` asks for: each action's rate per
// simulated hour, how long a hang or partition lasts (wall time, like
// leases), and the delay and drop fraction a delay or drop fault applies.
type MonkeySpec struct {
	Rates map[string]float64
	For   time.Duration
	Delay time.Duration
	Drop  float64
	// Until is how long after its start the monkey draws faults (zero:
	// for ever): a run's drain can then finish what the faults left.
	Until time.Duration
}

// DefaultFaultDuration is how long a monkey's hang or partition lasts when
// the spec does not say: long enough to outlast the default lease, so the
// scheduler must detect it.
const DefaultFaultDuration = 10 * time.Second

// ParseMonkey reads a spec such as "kill=2/h,hang=1/h,partition=1/h": each
// action with a rate per hour (/h), minute (/m) or day (/d) of simulated
// time (a bare number is per hour), plus optional for=DURATION (hangs and
// partitions), delay=DURATION and drop=FRACTION (for those faults) and
// until=DURATION (no fault after that long from the start). The
// delay and drop faults' own rates need their unit (delay=2/h, drop=1/h):
// delay=500ms and drop=0.2 are the settings.
func ParseMonkey(s string) (MonkeySpec, error) {
	spec := MonkeySpec{Rates: map[string]float64{}, For: DefaultFaultDuration, Delay: 500 * time.Millisecond, Drop: 0.2}
	if strings.TrimSpace(s) == "" {
		return spec, fmt.Errorf("--chaos: empty (want e.g. 'kill=2/h,hang=1/h,partition=1/h')")
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return spec, fmt.Errorf("--chaos %q: want KEY=VALUE, e.g. kill=2/h", part)
		}
		switch k {
		case "for":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return spec, fmt.Errorf("--chaos for=%q: want a positive duration such as 10s", v)
			}
			spec.For = d
			continue
		case "until":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return spec, fmt.Errorf("--chaos until=%q: want a positive duration such as 24h (faults stop after it)", v)
			}
			spec.Until = d
			continue
		case "delay", "drop":
			// delay= and drop= name a fault and a setting of it: a value
			// with a unit of rate (2/h) is the fault's rate, any other
			// the delay (500ms) or the fraction dropped (0.2).
			if strings.Contains(v, "/") {
				break
			}
			if k == "drop" {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil || f < 0 || f > 1 {
					return spec, fmt.Errorf("--chaos drop=%q: want a fraction from 0 to 1 (or a rate such as drop=2/h)", v)
				}
				spec.Drop = f
				continue
			}
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return spec, fmt.Errorf("--chaos delay=%q: want a duration such as 500ms (or a rate such as delay=2/h)", v)
			}
			spec.Delay = d
			continue
		}
		known := false
		for _, a := range events.ChaosActions {
			known = known || a == k
		}
		if !known {
			return spec, fmt.Errorf("--chaos: unknown action %q (want %s, or for=, delay=, drop=, until=)", k, strings.Join(events.ChaosActions, ", "))
		}
		num, unit, _ := strings.Cut(v, "/")
		rate, err := strconv.ParseFloat(num, 64)
		if err != nil || rate < 0 || math.IsInf(rate, 0) {
			return spec, fmt.Errorf("--chaos %s=%q: want a rate such as 2/h", k, v)
		}
		switch unit {
		case "", "h":
		case "m":
			rate *= 60
		case "d":
			rate /= 24
		default:
			return spec, fmt.Errorf("--chaos %s=%q: the rate is per h, m or d", k, v)
		}
		spec.Rates[k] = rate
	}
	return spec, nil
}

// Target is one GPU a monkey may pick.
type Target struct{ GPU, Node string }

// Fault is one chaos action at an offset of simulated time from the start.
type Fault struct {
	At      time.Duration
	Action  string
	Target  Target
	Request events.ChaosRequest
}

// Plan draws the faults of a seeded monkey over horizon (simulated time):
// each action arrives as a Poisson process at its rate, on a GPU drawn
// uniformly. Pure: the same spec, seed and targets give the same plan.
func Plan(spec MonkeySpec, seed uint64, targets []Target, horizon time.Duration) []Fault {
	rng := rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc909))
	var out []Fault
	actions := make([]string, 0, len(spec.Rates))
	for a := range spec.Rates {
		actions = append(actions, a)
	}
	sort.Strings(actions)
	for _, a := range actions {
		rate := spec.Rates[a]
		if rate <= 0 || (len(targets) == 0 && !events.SchedulerChaos(a)) {
			continue
		}
		at := time.Duration(0)
		for {
			// Exponential gaps with mean one hour / rate.
			at += time.Duration(rng.ExpFloat64() / rate * float64(time.Hour))
			if at > horizon {
				break
			}
			f := Fault{At: at, Action: a, Request: spec.request(a, rng)}
			if !events.SchedulerChaos(a) {
				f.Target = targets[rng.IntN(len(targets))]
				f.Request.GPU, f.Request.Node = f.Target.GPU, f.Target.Node
			}
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// drawsAny says whether the spec draws any fault with this many GPU targets.
func (spec MonkeySpec) drawsAny(targets int) bool {
	for a, r := range spec.Rates {
		if r > 0 && (targets > 0 || events.SchedulerChaos(a)) {
			return true
		}
	}
	return false
}

func (spec MonkeySpec) request(action string, rng *rand.Rand) events.ChaosRequest {
	req := events.ChaosRequest{Reason: "chaos monkey"}
	switch action {
	case events.ChaosHang, events.ChaosPartition, events.ChaosHangScheduler, events.ChaosPartitionScheduler:
		req.Duration = spec.For.String()
	case events.ChaosDelay:
		req.Delay, req.Duration = spec.Delay.String(), spec.For.String()
	case events.ChaosDrop:
		drop := spec.Drop
		req.Drop, req.Duration, req.Seed = &drop, spec.For.String(), rng.Uint64()
	}
	return req
}

// Send sends one chaos request and returns the raw reply.
func Send(nc *nats.Conn, subjects events.Subjects, action string, req events.ChaosRequest, timeout time.Duration) ([]byte, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	msg, err := nc.Request(subjects.Chaos(action), body, timeout)
	if err != nil {
		return nil, err
	}
	return msg.Data, nil
}

// monkeyHorizon is how far ahead a monkey plans at a time (simulated).
const monkeyHorizon = 24 * time.Hour

// RunMonkey sends a seeded monkey's faults as the clock reaches them
// (start plus each fault's offset), until ctx ends, through the public
// chaos subjects. holding says the caller called clock.Hold for the
// monkey's start. On a virtual clock the monkey holds the clock from the
// instant a fault is due until its answer has come (the fault has taken
// effect: a killed GPU's supervisor holds it on until the next
// incarnation is armed), and arms the next fault's timer before it lets
// go: so the same seed gives the same faults at the same instants.
func RunMonkey(ctx context.Context, nc *nats.Conn, subjects events.Subjects, clock simclock.Clock, spec MonkeySpec,
	seed uint64, targets []Target, log *zap.Logger, start time.Time, holding bool) {
	release := func() {
		if holding {
			holding = false
			clock.Release()
		}
	}
	defer release()
	if !spec.drawsAny(len(targets)) {
		return // no fault to draw: a plan of nothing, day after day
	}
	for day := uint64(0); ; day++ {
		plan := Plan(spec, seed+day, targets, monkeyHorizon)
		base := time.Duration(day) * monkeyHorizon
		for _, f := range plan {
			if spec.Until > 0 && base+f.At >= spec.Until {
				return // its time is over (the hold it has goes with the deferred release)
			}
			wait := start.Add(base + f.At).Sub(clock.Now())
			t := clock.NewTimer(wait)
			release()
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
				holding = true // a fired timer holds the clock until released
			}
			rep, err := Send(nc, subjects, f.Action, f.Request, 10*time.Second)
			if err != nil {
				log.Warn("chaos monkey: request failed", zap.String("action", f.Action), zap.String("gpu", f.Target.GPU), zap.Error(err))
				continue
			}
			log.Warn("chaos monkey", zap.String("action", f.Action), zap.String("gpu", f.Target.GPU), zap.ByteString("reply", rep))
		}
	}
}
