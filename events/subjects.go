package events

import (
	"slices"
	"strings"
)

// DefaultPrefix namespaces one cluster on a bus.
const DefaultPrefix = "gpusched"

// Subjects builds every subject of a cluster from its prefix.
type Subjects struct{ Prefix string }

// NewSubjects returns the subjects under prefix (DefaultPrefix when empty).
func NewSubjects(prefix string) Subjects {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return Subjects{Prefix: prefix}
}

// Service names one of the scheduler's request subjects, without the
// prefix: the builders below write it after the prefix, ParseService
// reads it back.
type Service string

// The scheduler's services.
const (
	ServiceJobSubmit       Service = "job.submit"
	ServiceJobCancel       Service = "job.cancel"
	ServiceJobGet          Service = "job.get"
	ServiceJobList         Service = "job.list"
	ServiceSchedStrategy   Service = "sched.strategy"
	ServiceSchedExplain    Service = "sched.explain"
	ServiceSchedCtl        Service = "sched.ctl"
	ServiceClusterSnapshot Service = "cluster.snapshot"
)

// Services are the scheduler's services, in the order the docs give them.
var Services = []Service{ServiceJobSubmit, ServiceJobCancel, ServiceJobGet, ServiceJobList, ServiceSchedStrategy,
	ServiceSchedExplain, ServiceSchedCtl, ServiceClusterSnapshot}

// ForTenants says whether a tenant's account imports the service: what a
// submitter may ask (all but the strategy and the scheduler's control).
func (v Service) ForTenants() bool {
	switch v {
	case ServiceJobSubmit, ServiceJobCancel, ServiceJobGet, ServiceJobList, ServiceSchedExplain, ServiceClusterSnapshot:
		return true
	}
	return false
}

// local is subject without the prefix and its dot; false for a subject
// under another prefix. It builds no string: the scheduler reads every
// subject it receives through it.
func (s Subjects) local(subject string) (string, bool) {
	n := len(s.Prefix)
	if len(subject) <= n || subject[n] != '.' || subject[:n] != s.Prefix {
		return "", false
	}
	return subject[n+1:], true
}

// under says whether subject is s's prefix, a dot and then rest's start.
func (s Subjects) under(subject, start string) bool {
	rest, ok := s.local(subject)
	return ok && strings.HasPrefix(rest, start)
}

// Service is the request subject of v.
func (s Subjects) Service(v Service) string { return s.Prefix + "." + string(v) }

// ParseService is the service subject names under s's prefix; false for
// any other subject (an event's, an unknown one).
func (s Subjects) ParseService(subject string) (Service, bool) {
	rest, ok := s.local(subject)
	if !ok {
		return "", false
	}
	return Service(rest), slices.Contains(Services, Service(rest))
}

// JobSubmit is the request subject that accepts a job spec.
func (s Subjects) JobSubmit() string { return s.Service(ServiceJobSubmit) }

// JobCancel is the request subject that cancels a job by id.
func (s Subjects) JobCancel() string { return s.Service(ServiceJobCancel) }

// JobGet is the request subject that returns a job with its history.
func (s Subjects) JobGet() string { return s.Service(ServiceJobGet) }

// JobList is the request subject that lists jobs by state, tenant and page.
func (s Subjects) JobList() string { return s.Service(ServiceJobList) }

// SchedStrategy is the request subject that reads or switches the policy.
func (s Subjects) SchedStrategy() string { return s.Service(ServiceSchedStrategy) }

// SchedExplain is the request subject that explains a job's placement or wait.
func (s Subjects) SchedExplain() string { return s.Service(ServiceSchedExplain) }

// ClusterSnapshot is the request subject that returns one page of the cluster state.
func (s Subjects) ClusterSnapshot() string { return s.Service(ServiceClusterSnapshot) }

// NodeCtl is the node actor's control subject.
func (s Subjects) NodeCtl(node string) string { return s.Prefix + ".node." + node + ".ctl" }

// NodeBatch is the subject of a node's batched controls (ControlBatch):
// the scheduler's controls to the node actor and the node's GPU actors,
// several in one message, for a node whose heartbeat says it takes them
// (NodeHeartbeat.BatchCtl).
func (s Subjects) NodeBatch(node string) string { return s.Prefix + ".node." + node + ".batch" }

// GPUCtl is a GPU actor's control subject.
func (s Subjects) GPUCtl(node, gpu string) string {
	return s.Prefix + ".gpu." + node + "." + gpu + ".ctl"
}

// NodeGPUs matches every GPU control subject of one node: the one
// subscription a process makes per node it hosts.
func (s Subjects) NodeGPUs(node string) string { return s.Prefix + ".gpu." + node + ".>" }

// JobEvent is the subject of a job lifecycle event of type typ.
func (s Subjects) JobEvent(typ string) string { return s.Prefix + ".evt.job." + typ }

// ParseJobEvent reads a job event's subject (JobEvent): its type.
func (s Subjects) ParseJobEvent(subject string) (typ string, ok bool) {
	typ, ok = strings.CutPrefix(subject, s.Prefix+".evt.job.")
	return typ, ok && typ != "" && !strings.Contains(typ, ".")
}

// GPUEvent is the subject of a GPU's event of type typ.
func (s Subjects) GPUEvent(node, gpu, typ string) string {
	return s.Prefix + ".evt.gpu." + node + "." + gpu + "." + typ
}

// NodeHeartbeat is the subject of a node's batched liveness.
func (s Subjects) NodeHeartbeat(node string) string {
	return s.Prefix + ".evt.node." + node + ".heartbeat"
}

// HeartbeatNode is the node a heartbeat's subject (NodeHeartbeat) names,
// "" for another subject. On an authenticated bus it is the node the
// server vouched for: a node's credentials publish only its own.
func HeartbeatNode(subject string) string {
	rest, ok := strings.CutSuffix(subject, ".heartbeat")
	if !ok {
		return ""
	}
	return rest[strings.LastIndexByte(rest, '.')+1:]
}

// GPUOwner is the node a GPU id names as its owner: "box2" for
// "box2-gpu-0", the form `cluster node --name box2` gives its GPUs; "" for
// an id that names no node (the embedded cluster's "gpu-3"). A GPU's
// identity belongs to the node that owns it: no other node may announce
// it (or squat it before its owner joins).
func GPUOwner(gpu string) string {
	i := strings.LastIndex(gpu, "-gpu-")
	if i <= 0 || strings.Trim(gpu[i+len("-gpu-"):], "0123456789") != "" || len(gpu) == i+len("-gpu-") {
		return ""
	}
	return gpu[:i]
}

// SpeaksFor reports whether node may speak for gpu: the id names no owner,
// or names node itself or a prefix of its name ("far-gpu-0" on node
// "far-node": the owner named is node's name up to a "-").
func SpeaksFor(node, gpu string) bool {
	owner := GPUOwner(gpu)
	return owner == "" || owner == node || strings.HasPrefix(node, owner+"-")
}

// NodeEvent is the subject of the scheduler's word on a node: typ
// NodeUp (it joined, or rejoined) or NodeDown (its heartbeats stopped for a
// lease).
func (s Subjects) NodeEvent(node, typ string) string {
	return s.Prefix + ".evt.node." + node + "." + typ
}

// Node event types the scheduler publishes (the node actor's own is the
// heartbeat).
const (
	NodeUp   = "up"
	NodeDown = "down"
)

// SchedEvent is the subject of a scheduler event of type typ.
func (s Subjects) SchedEvent(typ string) string { return s.Prefix + ".evt.sched." + typ }

// Metrics is the subject of the periodic cluster metrics.
func (s Subjects) Metrics() string { return s.Prefix + ".evt.metrics" }

// AllEvents matches every event of the cluster.
func (s Subjects) AllEvents() string { return s.Prefix + ".evt.>" }

// StoredEvents are the subjects the event stream keeps: every event
// (AllEvents) but the nodes' heartbeats. A heartbeat is liveness, not
// history: its volume follows the node count, not what happens — 12,500
// nodes' heartbeats (100,000 GPUs) were stored at about 7.5 MB/s, which
// would fill the stream's default 1 GiB in a little over two minutes,
// evicting every job's events before them.
// The node's joins and losses (NodeUp, NodeDown) are kept; the heartbeats
// go to live subscribers only.
func (s Subjects) StoredEvents() []string {
	p := s.Prefix + ".evt."
	return []string{p + "job.>", p + "gpu.>", p + "node.*." + NodeUp, p + "node.*." + NodeDown,
		p + "sched.>", p + "metrics", p + "security.>", p + "chaos.>"}
}

// IsEvent says whether subject is an event's (<p>.evt.…): what AllEvents
// matches.
func (s Subjects) IsEvent(subject string) bool { return s.under(subject, "evt.") }

// Answerable says whether the cluster's services answer a request whose
// reply subject is reply: not when it lies under the prefix (an event's
// subject, where the answer would be stored, charged to a node and judged
// as that node's event; or a control subject) or is a server subject
// ($JS.API…, $KV…: the answer would be a request to JetStream, or a
// journal write, made with the control plane's own rights). A requester
// in another account cannot name such a subject (its reply crosses the
// import as the server's _R_ subject); one in the control account (a
// node) could. A plain publish (no reply) asks for no answer.
func (s Subjects) Answerable(reply string) bool {
	underPrefix := len(reply) > len(s.Prefix) && reply[len(s.Prefix)] == '.' && strings.HasPrefix(reply, s.Prefix)
	return !underPrefix && !strings.HasPrefix(reply, "$")
}

// AllGPUEvents matches every GPU event.
func (s Subjects) AllGPUEvents() string { return s.Prefix + ".evt.gpu.>" }

// AllNodeEvents matches every node event.
func (s Subjects) AllNodeEvents() string { return s.Prefix + ".evt.node.>" }

// AllHeartbeats matches every node's heartbeat (NodeHeartbeat).
func (s Subjects) AllHeartbeats() string { return s.Prefix + ".evt.node.*.heartbeat" }

// EventNode is the node a GPU or node event's subject names ("box2" for
// <p>.evt.gpu.box2.box2-gpu-0.status and <p>.evt.node.box2.heartbeat), ""
// for another subject. What a node publishes on an authenticated bus is
// under its own name: the server vouches for it.
func (s Subjects) EventNode(subject string) string {
	rest, ok := strings.CutPrefix(subject, s.Prefix+".evt.")
	if !ok {
		return ""
	}
	rest, ok = strings.CutPrefix(rest, "gpu.")
	if !ok {
		if rest, ok = strings.CutPrefix(rest, "node."); !ok {
			return ""
		}
	}
	node, _, ok := strings.Cut(rest, ".")
	if !ok {
		return ""
	}
	return node
}

// SecurityEvent is the subject of the control plane's word on a node it
// holds to its budget (cluster: node-cut-off, node-readmitted).
func (s Subjects) SecurityEvent(typ string) string { return s.Prefix + ".evt.security." + typ }

// Job event types (the lifecycle of DESIGN §3).
const (
	JobSubmitted = "submitted"
	JobQueued    = "queued"
	JobPlaced    = "placed"
	JobStarted   = "started"
	JobPreempted = "preempted"
	JobCompleted = "completed"
	JobLost      = "lost"
	JobRejected  = "rejected"
	JobCancelled = "cancelled"
	// JobRestored is not a transition: a restarted scheduler says which
	// unfinished jobs it took back from its journal (queued, or running
	// as the journal last knew), so that a history missing a job's
	// job.submitted (the process killed between the journal's write and
	// the event's) still names every accepted job.
	JobRestored = "restored"
)

// GPU event types.
const (
	GPUStatusType = "status"
	GPUUp         = "up"
	GPUDown       = "down"
	GPUOOM        = "oom"
)

// Scheduler event types.
const (
	SchedDecision = "decision"
	SchedPolicy   = "policy"
	SchedPending  = "pending"
)

// ChaosKill is the request subject that crashes a GPU actor.
func (s Subjects) ChaosKill() string { return s.Prefix + ".chaos.kill" }

// Chaos is the request subject of one chaos action (kill, hang,
// partition, delay, drop, kill-scheduler).
func (s Subjects) Chaos(action string) string { return s.Prefix + ".chaos." + action }

// AllChaos matches every chaos request subject.
func (s Subjects) AllChaos() string { return s.Prefix + ".chaos.*" }

// ChaosEvent is the subject of the event that records a chaos action.
func (s Subjects) ChaosEvent(action string) string { return s.Prefix + ".evt.chaos." + action }

// NodeLease is where the scheduler answers a node's heartbeat with the
// leases it grants (the heartbeat's reply subject).
func (s Subjects) NodeLease(node string) string { return s.Prefix + ".node." + node + ".lease" }

// NodeAll matches every subject addressed to one node actor (ctl, lease):
// the node's one subscription for itself.
func (s Subjects) NodeAll(node string) string { return s.Prefix + ".node." + node + ".*" }

// SchedCtl is the scheduler actor's control subject (kill, for chaos).
func (s Subjects) SchedCtl() string { return s.Service(ServiceSchedCtl) }

// Chaos actions.
const (
	ChaosKillAction    = "kill"
	ChaosHang          = "hang"
	ChaosPartition     = "partition"
	ChaosDelay         = "delay"
	ChaosDrop          = "drop"
	ChaosKillScheduler = "kill-scheduler"
	// ChaosHangScheduler freezes the scheduler for a duration (either
	// clock): it handles nothing, runs no timer, answers nothing.
	ChaosHangScheduler = "hang-scheduler"
	// ChaosPartitionScheduler cuts the scheduler off from the bus for a
	// duration (either clock): nothing reaches it, what it sends waits
	// until it heals.
	ChaosPartitionScheduler = "partition-scheduler"
	// ChaosFailoverScheduler cuts the scheduler off from the bus for good:
	// it stops placing half a lease later, and a standby in the same
	// process takes the control plane over from the job journal three
	// quarters of a lease after the cut; nothing the cut-off one kept is
	// ever sent.
	ChaosFailoverScheduler = "failover-scheduler"
)

// ChaosActions lists every chaos action, in the order the docs give them.
var ChaosActions = []string{ChaosKillAction, ChaosHang, ChaosPartition, ChaosDelay, ChaosDrop, ChaosKillScheduler,
	ChaosHangScheduler, ChaosPartitionScheduler, ChaosFailoverScheduler}

// SchedulerChaos says whether a chaos action targets the scheduler (no
// GPU or node).
func SchedulerChaos(action string) bool {
	return action == ChaosKillScheduler || action == ChaosHangScheduler || action == ChaosPartitionScheduler ||
		action == ChaosFailoverScheduler
}

// Scheduler lifecycle event types (published by its supervisor).
const (
	SchedUp   = "up"
	SchedDown = "down"
)

// The parsers below read the subjects the builders above write, from the
// end (a prefix may hold dots), without allocating: routers call them on
// every control message.

// lastTokens splits the last n (at most 5) tokens off subject; ok is false
// when subject has fewer than n+1 tokens (a prefix before them) or an
// empty one among them.
func lastTokens(subject string, n int) (tokens [5]string, ok bool) {
	rest := subject
	for i := n - 1; i >= 0; i-- {
		dot := strings.LastIndexByte(rest, '.')
		if dot < 0 || dot == len(rest)-1 {
			return tokens, false
		}
		tokens[i], rest = rest[dot+1:], rest[:dot]
	}
	return tokens, rest != ""
}

// ParseGPUCtl reads a GPU actor's control subject (GPUCtl): the node and
// the GPU it addresses.
func ParseGPUCtl(subject string) (node, gpu string, ok bool) {
	t, ok := lastTokens(subject, 4)
	if !ok || t[0] != "gpu" || t[3] != "ctl" {
		return "", "", false
	}
	return t[1], t[2], true
}

// ParseNodeSubject reads a subject addressed to a node actor (NodeCtl,
// NodeLease, NodeBatch): the node and what it is ("ctl", "lease",
// "batch").
func ParseNodeSubject(subject string) (node, what string, ok bool) {
	t, ok := lastTokens(subject, 3)
	if !ok || t[0] != "node" {
		return "", "", false
	}
	return t[1], t[2], true
}

// ParseGPUEvent reads a GPU event's subject (GPUEvent): its node, GPU and
// type. On an authenticated bus the node is what the server vouched for:
// a node's credentials publish only under their own.
func ParseGPUEvent(subject string) (node, gpu, typ string, ok bool) {
	t, ok := lastTokens(subject, 5)
	if !ok || t[0] != "evt" || t[1] != "gpu" {
		return "", "", "", false
	}
	return t[2], t[3], t[4], true
}

// ChaosAction is the action a chaos request's subject (Chaos) names.
func ChaosAction(subject string) string {
	return subject[strings.LastIndexByte(subject, '.')+1:]
}

// AllGPUCtl matches every GPU actor's control subject: the one
// subscription of a process hosting many nodes (node.Router).
func (s Subjects) AllGPUCtl() string { return s.Prefix + ".gpu.*.*.ctl" }

// AllNodeSubjects matches every subject addressed to a node actor.
func (s Subjects) AllNodeSubjects() string { return s.Prefix + ".node.*.*" }

// AllJobRequests matches the job request subjects (submit, cancel, get, list).
func (s Subjects) AllJobRequests() string { return s.Prefix + ".job.*" }

// AllSchedRequests matches the scheduler's own request subjects
// (strategy, explain, ctl).
func (s Subjects) AllSchedRequests() string { return s.Prefix + ".sched.*" }

// IsGPUEvent says whether subject is a GPU actor's event (GPUEvent).
func (s Subjects) IsGPUEvent(subject string) bool { return s.under(subject, "evt.gpu.") }

// IsNodeEvent says whether subject is a node's event (NodeHeartbeat,
// NodeEvent).
func (s Subjects) IsNodeEvent(subject string) bool { return s.under(subject, "evt.node.") }

// IsChaos says whether subject is a chaos request (Chaos).
func (s Subjects) IsChaos(subject string) bool { return s.under(subject, "chaos.") }

// NodeGPUEvents matches every event of one node's GPUs: what a node's
// credentials may publish.
func (s Subjects) NodeGPUEvents(node string) string { return s.Prefix + ".evt.gpu." + node + ".>" }

// NodeSubjects matches every subject addressed to one node actor, now and
// later: what a node's credentials may subscribe to.
func (s Subjects) NodeSubjects(node string) string { return s.Prefix + ".node." + node + ".>" }

// TenantServices are the request subjects a tenant's account imports
// from the control account: what a submitter may ask.
func (s Subjects) TenantServices() []string {
	var out []string
	for _, v := range Services {
		if v.ForTenants() {
			out = append(out, s.Service(v))
		}
	}
	return out
}
