package observer

import (
	"sort"
	"strings"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/policy"
)

// Explanations are the dashboards' plain-English texts, one source for the
// web page (each element's hover, through /api/help) and the terminal
// dashboard (behind ?): one or two sentences for someone who has never run
// a cluster. Keys name what they explain; TestEveryControlExplainsItself
// checks every control and headline figure of both has one.
var Explanations = map[string]string{
	"strategy": "The scheduling strategy decides which GPU a new job goes to. Switch it live and watch where the next jobs land.",
	"queue":    "The queue order decides which waiting job is tried first when a GPU frees up.",
	"priority": "A job's importance: high, medium or low. A higher-priority job may stop (preempt) a lower one to take its GPU.",
	"preemption": "Stopping a running job to make room for a more important one. The stopped job keeps its work up to its last " +
		"checkpoint and waits in the queue again.",
	"vram": "GPU memory. A job needs all of it in one piece on one GPU; if it does not fit, the job waits.",
	"fragmentation": "Free GPU memory split into pieces too small for the jobs that wait: there is room in total, but no piece " +
		"big enough. Bin-packing and FGD try to avoid it.",
	"frag_gpus": "F(M), the FGD paper's measure: how many whole GPUs' worth of free capacity the typical job could not use, " +
		"because it sits in pieces that are too small.",
	"allocation": "The share of all GPU capacity that jobs have reserved right now.",
	"utilisation": "How busy the GPUs' compute is, on average. Past 100 % on one GPU its jobs share it and each runs slower; " +
		"binpack, spread, first-fit and smallest-fit never go past 100 % unless the cluster runs with --oversubscribe.",
	"util":        "How much of one GPU's compute a job uses. Jobs whose use adds up past 100 % slow each other down.",
	"power":       "What the GPUs draw right now, in watts: an idle GPU still draws some, a busy one much more.",
	"energy":      "The energy the GPUs have used since the cluster started, in kilowatt-hours. It only ever grows.",
	"why":         "Why a job waits, or how the scheduler chose its GPU: every candidate and its score (click a job on the web page; the terminal's Why pane lists every job).",
	"queue-order": "The order waiting jobs are tried in when a GPU frees up. Switch it live: the queue re-sorts at once.",
	"job-name":    "The job's name, as its submission gave it. Click the row to see why it waits or why it went where it went.",
	"duration":    "How long the job runs at full speed on a reference GPU; sharing a GPU or a slower GPU makes it take longer.",
	"done":        "How much of its work the job has done.",
	"gpu-col":     "The GPU (or GPUs) the job runs on.",
	"waiting":     "How long the job has been waiting, in simulated time.",
	"why-waits":   "Why the job waits: the scheduler's own reason, in words.",
	"event-line":  "One thing that happened, in simulated time: a job placed, finished or preempted, a GPU failing or coming back.",
	"kill":        "Crash this GPU's actor, as a real GPU failure would: its jobs are lost and go back to the queue, and it restarts empty.",
	"add-job":     "Submit a job to the cluster, as a user of a real cluster would. It starts at once if a GPU has room, else it waits.",
	"running":     "Jobs on GPUs now, with how far along they are.",
	"queue-table": "Jobs waiting for a GPU, and the reason each one waits.",
	"events":      "Everything that happens, as it happens: jobs placed, finished, preempted; GPUs failing and coming back.",
	"simulated":   "The cluster's own clock: it runs faster than real time, so hours of work pass in minutes.",
	"gpu-unknown": "A GPU the scheduler knows is there but has not heard from since it (re)started: its state shows once the GPU answers.",
	"gpu-stale":   "The scheduler restarted and has not read this GPU again yet: these are the last figures known of it, greyed until it answers.",
	"settling":    "The scheduler restarted and is re-reading the cluster: the figures shown are the last known ones until it has, never its partial zeros.",
	"gpu-card":    "One GPU: its model, how busy it is, how much of its memory jobs hold, and which jobs run on it.",
	"perf-level": "This GPU's own speed for each kind of job (class A, B…) as a performance level, L0 the fastest. A job on " +
		"several GPUs runs at its slowest GPU's pace, slower still across nodes; hover a class for its figure.",
	"completed":   "Jobs that finished all their work since the cluster started.",
	"frag-toggle": "Show each GPU's memory as a strip, one colour per job and hatching for free space: gaps between jobs are fragmentation.",
	"gpus":        "How many GPUs the cluster has, and how many have a job on them.",
	"status":      "Whether this dashboard is connected to the cluster.",
}

// PolicyTradeoffs says what each placement policy costs, shown under the
// strategy control for the one chosen (the demo's "Pack onto busiest GPU —
// saves power, causes hot-spots").
var PolicyTradeoffs = map[string]string{
	"binpack":        "Pack onto the busiest GPU that still has compute and memory to spare — frees whole GPUs for big jobs and saves idle power, but runs GPUs hot (hot-spots); with --oversubscribe it stacks past 100 % and the jobs there slow down.",
	"spread":         "Spread onto the least busy GPU — jobs run fastest alone, but every GPU stays a little busy and big jobs may find no empty GPU.",
	"first-fit":      "The first GPU that fits, by number — simple and predictable, packs the low-numbered GPUs.",
	"smallest-fit":   "The smallest GPU the job fits — small jobs take the small GPUs (V100s) and leave the big ones for what only they can hold.",
	"best-fit":       "The node left with the least free capacity — packs nodes tightly (the FGD paper's BestFit).",
	"dotprod":        "The node whose free resources match the job's shape least — the FGD paper's DotProduct.",
	"fgd":            "The placement that fragments the cluster least for the jobs that usually come — fewer jobs wait on scattered free memory (the FGD paper).",
	"gpu-clustering": "Jobs of one kind together on a node — keeps whole-GPU and shared-GPU jobs apart (the FGD paper's Clustering).",
	"gpu-packing":    "A used GPU first, then a used node, then an empty one — packs like binpack at node level (the FGD paper's GPU Packing).",
	"random":         "A random node that fits — the baseline the other policies are measured against.",
}

// QueueTradeoffs says what each queue order favours.
var QueueTradeoffs = map[string]string{
	"priority": "Higher priority first, then who came first — important jobs wait least.",
	"fifo":     "Who came first goes first, whatever the priority — fair by arrival.",
	"las":      "The job that has had the least GPU time goes first (Tiresias) — short jobs finish quickly without knowing their length.",
	"srtf":     "The job with the least work left goes first — the shortest average wait, long jobs may wait long.",
	"sjf":      "The shortest job goes first — like srtf, but judged on the whole job.",
}

// HelpTexts is every text: the explanations, then each policy's and queue
// order's trade-off under "policy:<name>" and "queue:<name>".
func HelpTexts() map[string]string {
	out := make(map[string]string, len(Explanations)+len(PolicyTradeoffs)+len(QueueTradeoffs))
	for k, v := range Explanations {
		out[k] = v
	}
	for k, v := range PolicyTradeoffs {
		out["policy:"+k] = v
	}
	for k, v := range QueueTradeoffs {
		out["queue:"+k] = v
	}
	return out
}

// Tradeoff is the trade-off of the named policy ("" when none is written).
func Tradeoff(name string) string { return PolicyTradeoffs[name] }

// HelpKeys lists the keys of HelpTexts, sorted.
func HelpKeys() []string {
	t := HelpTexts()
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// unexplained lists the registered policies and queue orders without a
// trade-off text.
func unexplained() []string {
	var out []string
	for _, p := range policy.Names[policy.Policy]() {
		if PolicyTradeoffs[p] == "" {
			out = append(out, "policy:"+p)
		}
	}
	for _, q := range policy.Names[policy.QueueSort]() {
		if QueueTradeoffs[q] == "" {
			out = append(out, "queue:"+q)
		}
	}
	return out
}

// PinNote says what a pinned placement means ("" for one that was not):
// the submission chose the GPU (the demo's starting picture is drawn
// so), so its one candidate's score says nothing, and where the policy
// alone would have put the job.
func PinNote(d events.Decision) string {
	if d.Pinned == "" {
		return ""
	}
	alone := "would have found no other place for it"
	if d.Unpinned != "" {
		alone = "alone would have chosen " + d.Unpinned
		if d.Unpinned == d.Pinned || d.Unpinned == strings.Join(d.GPUs, ",") {
			alone = "alone would have chosen the same"
		}
	}
	return "placed on " + d.Pinned + " because its submission pinned it there (as the demo draws its starting picture); " +
		d.Policy + " " + alone
}
