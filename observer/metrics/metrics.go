package metrics

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/observer"
)

// Exporter turns the event stream into Prometheus metrics. Feed it every
// event (it is an observer.WatchOptions.OnEvent) and register it.
type Exporter struct {
	mu        sync.Mutex
	cluster   events.Metrics
	haveTotal bool
	gpus      map[string]events.GPUStatus
	alive     map[string]bool
	// statusAt is when each GPU's status was reported (simulated time),
	// simNow the scheduler's latest simulated time (its metrics and
	// snapshots), and energy each
	// GPU's meter as last exported: the meter runs on between a GPU's
	// statuses at the power it last reported, and never goes back.
	statusAt  map[string]time.Time
	simNow    time.Time
	energy    map[string]float64
	submitted map[string]time.Time
	states    map[string]string // job → its last state
	latency   prometheus.Histogram
	queueWait prometheus.Histogram
	events    uint64
	gaps      *observer.Gaps
}

// New returns an exporter; gaps, when not nil, is the watcher's gap counter.
func New(gaps *observer.Gaps) *Exporter {
	return &Exporter{
		gpus: map[string]events.GPUStatus{}, alive: map[string]bool{}, submitted: map[string]time.Time{},
		statusAt: map[string]time.Time{}, energy: map[string]float64{},
		states: map[string]string{}, gaps: gaps,
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "gpusched_placement_latency_seconds",
			Help: "Wall time from a job's submission to its first placement (event times stamped by the scheduler).",
			// 100 µs to ~100 s: an idle cluster places in well under a
			// millisecond, a queued job waits for room.
			Buckets: prometheus.ExponentialBuckets(1e-4, 4, 11),
		}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "gpusched_queue_wait_simulated_seconds",
			Help: "Simulated time from a job's submission to its first start.",
			// 1 s to ~12 days of simulated time.
			Buckets: prometheus.ExponentialBuckets(1, 4, 11),
		}),
	}
}

// heard moves the exporter's simulated now on to t.
func (e *Exporter) heard(t time.Time) {
	if t.After(e.simNow) {
		e.simNow = t
	}
}

// energyOf is a GPU's meter now: its last reported energy plus the power
// it last reported since, never less than exported before.
func (e *Exporter) energyOf(key string, g events.GPUStatus) float64 {
	j := g.EnergyJ
	if at, ok := e.statusAt[key]; ok && !at.IsZero() {
		j += g.PowerW * max(0, e.simNow.Sub(at).Seconds())
	}
	j = max(j, e.energy[key])
	e.energy[key] = j
	return j
}

// SetGaps gives the exporter the watcher's gap counter (for the missed-events metric).
func (e *Exporter) SetGaps(g *observer.Gaps) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gaps = g
}

// OnSnapshot folds a cluster snapshot in: the summary, every GPU's
// liveness, and the GPUs no status event has described yet (idle since
// the observer attached).
func (e *Exporter) OnSnapshot(snap *events.Snapshot) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cluster, e.haveTotal = snap.Summary, true
	e.heard(snap.SimTime)
	for _, g := range snap.GPUs {
		key := g.Node + "/" + g.GPU
		if _, ok := e.gpus[key]; !ok || !e.statusAt[key].After(snap.SimTime) {
			// A snapshot's GPU energy is as of its instant: newer than a
			// status reported before it.
			e.gpus[key], e.statusAt[key] = g.GPUStatus, snap.SimTime
		}
		e.alive[key] = g.Alive
	}
}

// OnEvent folds one event into the metrics.
func (e *Exporter) OnEvent(ev *events.Decoded, subject string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events++
	switch ev.Type {
	case events.Type("metrics", "cluster"):
		// The scheduler's clock moves the meters on, no one else's: a
		// node's events carry the time it says, which vouches for nothing
		// beyond its own GPUs.
		e.heard(ev.SimTime)
		json.Unmarshal(ev.Data, &e.cluster)
		e.haveTotal = true
	case events.Type("gpu", events.GPUStatusType), events.Type("gpu", events.GPUUp):
		var st events.GPUStatus
		if json.Unmarshal(ev.Data, &st) == nil {
			e.gpus[st.Node+"/"+st.GPU] = st
			e.statusAt[st.Node+"/"+st.GPU] = ev.SimTime
			e.alive[st.Node+"/"+st.GPU] = true
		}
	case events.Type("gpu", events.GPUDown):
		var st events.GPUStatus
		if json.Unmarshal(ev.Data, &st) == nil {
			e.alive[st.Node+"/"+st.GPU] = false
		}
	case events.Type("node", "heartbeat"):
		var hb events.NodeHeartbeat
		if json.Unmarshal(ev.Data, &hb) == nil {
			for _, g := range hb.GPUs {
				e.alive[hb.Node+"/"+g.GPU] = g.Alive
			}
		}
	default:
		state, ok := events.JobEventType(ev.Type)
		if !ok {
			return
		}
		var j events.JobInfo
		if json.Unmarshal(ev.Data, &j) != nil {
			return
		}
		e.states[j.JobID] = state
		switch state {
		case events.JobSubmitted:
			e.submitted[j.JobID] = ev.Time
		case events.JobPlaced:
			if t, ok := e.submitted[j.JobID]; ok {
				e.latency.Observe(ev.Time.Sub(t).Seconds())
				delete(e.submitted, j.JobID)
			}
		case events.JobStarted:
			if j.Preemptions == 0 && j.FirstStartedAt != nil {
				e.queueWait.Observe(j.FirstStartedAt.Sub(j.SubmittedAt).Seconds())
			}
		case events.JobCompleted, events.JobCancelled, events.JobRejected:
			delete(e.submitted, j.JobID)
			delete(e.states, j.JobID)
		}
	}
}

var (
	gpuLabels       = []string{"gpu", "node", "model"}
	descGPUUtil     = prometheus.NewDesc("gpusched_gpu_utilization_ratio", "GPU utilisation, 0..1 (the running jobs' summed util, capped by the GPU).", gpuLabels, nil)
	descGPUVRAMUsed = prometheus.NewDesc("gpusched_gpu_vram_used_bytes", "VRAM held by jobs on the GPU.", gpuLabels, nil)
	descGPUVRAM     = prometheus.NewDesc("gpusched_gpu_vram_total_bytes", "VRAM capacity of the GPU.", gpuLabels, nil)
	descGPUHole     = prometheus.NewDesc("gpusched_gpu_vram_largest_free_bytes", "The GPU's largest free VRAM block.", gpuLabels, nil)
	descGPUPower    = prometheus.NewDesc("gpusched_gpu_power_watts", "The GPU's power draw.", gpuLabels, nil)
	descGPUEnergy   = prometheus.NewDesc("gpusched_gpu_energy_joules_total", "Energy the GPU has used (simulated).", gpuLabels, nil)
	descGPUJobs     = prometheus.NewDesc("gpusched_gpu_jobs", "Jobs (running or reserved) on the GPU.", gpuLabels, nil)
	descGPUUp       = prometheus.NewDesc("gpusched_gpu_up", "1 when the GPU's actor is alive.", gpuLabels, nil)
	descJobs        = prometheus.NewDesc("gpusched_jobs", "Jobs by state (queued, running now; completed, rejected, cancelled so far).", []string{"state"}, nil)
	descJobsTotal   = prometheus.NewDesc("gpusched_jobs_total", "Jobs that ended, by how (completed, rejected, cancelled), since the cluster started: never decreases, across scheduler restarts too.", []string{"state"}, nil)
	descQueue       = prometheus.NewDesc("gpusched_queue_length", "Jobs waiting in the queue.", nil, nil)
	descPreempt     = prometheus.NewDesc("gpusched_preemptions_total", "Preemptions since the cluster started.", nil, nil)
	descEnergy      = prometheus.NewDesc("gpusched_energy_joules_total", "Energy the cluster's GPUs have used (simulated).", nil, nil)
	descPower       = prometheus.NewDesc("gpusched_power_watts", "The cluster's GPU power draw.", nil, nil)
	descUtil        = prometheus.NewDesc("gpusched_utilization_ratio", "Mean GPU utilisation, 0..1.", nil, nil)
	descAlloc       = prometheus.NewDesc("gpusched_allocation_ratio", "GPU share allocated to jobs, 0..1 (the FGD paper's allocation ratio).", nil, nil)
	descFragGPUs    = prometheus.NewDesc("gpusched_fragmentation_gpus", "FGD cluster fragmentation F(M): idle GPU share the typical workload cannot use, in GPUs.", nil, nil)
	descFragRatio   = prometheus.NewDesc("gpusched_fragmentation_ratio", "F(M) as a fraction of the idle GPU share, 0..1.", nil, nil)
	descVRAMFrag    = prometheus.NewDesc("gpusched_vram_fragmentation_ratio", "Free VRAM outside each GPU's largest free block, as a fraction of the free VRAM.", nil, nil)
	descVRAMFragB   = prometheus.NewDesc("gpusched_vram_fragmented_bytes", "Free VRAM outside each GPU's largest free block, summed.", nil, nil)
	descGPUs        = prometheus.NewDesc("gpusched_gpus", "GPUs in the cluster, by whether they are alive and busy.", []string{"state"}, nil)
	descDeaths      = prometheus.NewDesc("gpusched_gpu_deaths_total", "GPUs the scheduler declared dead (lease) or heard crash.", nil, nil)
	descJobsLost    = prometheus.NewDesc("gpusched_jobs_lost_total", "Running jobs lost with their GPU and re-queued.", nil, nil)
	descRelearned   = prometheus.NewDesc("gpusched_jobs_relearned_total", "Running jobs a restarted scheduler re-learned from the GPU actors.", nil, nil)
	descStale       = prometheus.NewDesc("gpusched_stale_messages_total", "Messages from dead GPU incarnations the scheduler ignored.", nil, nil)
	descSchedInc    = prometheus.NewDesc("gpusched_scheduler_incarnation", "The scheduler's incarnation (1, then one more per restart).", nil, nil)
	descEvents      = prometheus.NewDesc("gpusched_observer_events_total", "Events this observer has read.", nil, nil)
	descMissed      = prometheus.NewDesc("gpusched_observer_events_missed_total", "Events this observer missed (gaps in a source's seq).", nil, nil)
)

// Describe sends every metric's description.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descGPUUtil, descGPUVRAMUsed, descGPUVRAM, descGPUHole, descGPUPower, descGPUEnergy,
		descGPUJobs, descGPUUp, descJobs, descJobsTotal, descQueue, descPreempt, descEnergy, descPower, descUtil, descAlloc, descFragGPUs,
		descFragRatio, descVRAMFrag, descVRAMFragB, descGPUs, descEvents, descMissed, descDeaths, descJobsLost, descRelearned,
		descStale, descSchedInc} {
		ch <- d
	}
	e.latency.Describe(ch)
	e.queueWait.Describe(ch)
}

// Collect sends the metrics as they stand.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	e.mu.Lock()
	defer e.mu.Unlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	for key, g := range e.gpus {
		l := []string{g.GPU, g.Node, g.Model}
		gauge(descGPUUtil, min(g.Util, 100)/100, l...)
		gauge(descGPUVRAMUsed, float64(g.VRAMUsed), l...)
		gauge(descGPUVRAM, float64(g.VRAMTotal), l...)
		gauge(descGPUHole, float64(g.VRAMLargestFree), l...)
		gauge(descGPUPower, g.PowerW, l...)
		counter(descGPUEnergy, e.energyOf(key, g), l...)
		gauge(descGPUJobs, float64(len(g.Jobs)), l...)
		up := 0.0
		if e.alive[key] {
			up = 1
		}
		gauge(descGPUUp, up, l...)
	}
	if e.haveTotal {
		m := e.cluster
		gauge(descJobs, float64(m.JobsQueued), "queued")
		gauge(descJobs, float64(m.JobsRunning), "running")
		gauge(descJobs, float64(m.JobsCompleted), "completed")
		gauge(descJobs, float64(m.JobsRejected), "rejected")
		gauge(descJobs, float64(m.JobsCancelled), "cancelled")
		counter(descJobsTotal, float64(m.JobsCompleted), "completed")
		counter(descJobsTotal, float64(m.JobsRejected), "rejected")
		counter(descJobsTotal, float64(m.JobsCancelled), "cancelled")
		gauge(descQueue, float64(m.JobsQueued))
		counter(descPreempt, float64(m.Preemptions))
		counter(descDeaths, float64(m.GPUDeaths))
		counter(descJobsLost, float64(m.JobsLost))
		counter(descRelearned, float64(m.JobsAdopted))
		counter(descStale, float64(m.StaleIgnored))
		gauge(descSchedInc, float64(m.Incarnation))
		// 3.6e6 joules make one kilowatt-hour.
		counter(descEnergy, m.EnergyKWh*3.6e6)
		gauge(descPower, m.PowerW)
		gauge(descUtil, m.UtilMean/100)
		gauge(descAlloc, m.Allocation)
		gauge(descFragGPUs, m.FragAmount)
		gauge(descFragRatio, m.FragRatio)
		gauge(descVRAMFrag, m.VRAMFragmentation)
		gauge(descVRAMFragB, float64(m.FragmentedVRAM))
		gauge(descGPUs, float64(m.GPUs), "total")
		gauge(descGPUs, float64(m.GPUsAlive), "alive")
		gauge(descGPUs, float64(m.GPUsBusy), "busy")
	}
	counter(descEvents, float64(e.events))
	if e.gaps != nil {
		counter(descMissed, float64(e.gaps.Missed()))
	}
	e.latency.Collect(ch)
	e.queueWait.Collect(ch)
}

// Handler serves the exporter's metrics, with the observer process's own
// Go and process metrics, at /metrics.
func (e *Exporter) Handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(e, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "gpusched metrics: see /metrics")
	})
	return mux
}
