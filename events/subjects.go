package events

import "strings"

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

// JobSubmit is the request subject that accepts a job spec.
func (s Subjects) JobSubmit() string { return s.Prefix + ".job.submit" }

// JobCancel is the request subject that cancels a job by id.
func (s Subjects) JobCancel() string { return s.Prefix + ".job.cancel" }

// JobGet is the request subject that returns a job with its history.
func (s Subjects) JobGet() string { return s.Prefix + ".job.get" }

// JobList is the request subject that lists jobs by state, tenant and page.
func (s Subjects) JobList() string { return s.Prefix + ".job.list" }

// SchedStrategy is the request subject that reads or switches the policy.
func (s Subjects) SchedStrategy() string { return s.Prefix + ".sched.strategy" }

// SchedExplain is the request subject that explains a job's placement or wait.
func (s Subjects) SchedExplain() string { return s.Prefix + ".sched.explain" }

// ClusterSnapshot is the request subject that returns one page of the cluster state.
func (s Subjects) ClusterSnapshot() string { return s.Prefix + ".cluster.snapshot" }

// NodeCtl is the node actor's control subject.
func (s Subjects) NodeCtl(node string) string { return s.Prefix + ".node." + node + ".ctl" }

// GPUCtl is a GPU actor's control subject.
func (s Subjects) GPUCtl(node, gpu string) string {
	return s.Prefix + ".gpu." + node + "." + gpu + ".ctl"
}

// NodeGPUs matches every GPU control subject of one node: the one
// subscription a process makes per node it hosts.
func (s Subjects) NodeGPUs(node string) string { return s.Prefix + ".gpu." + node + ".>" }

// JobEvent is the subject of a job lifecycle event of type typ.
func (s Subjects) JobEvent(typ string) string { return s.Prefix + ".evt.job." + typ }

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

// AllGPUEvents matches every GPU event.
func (s Subjects) AllGPUEvents() string { return s.Prefix + ".evt.gpu.>" }

// AllNodeEvents matches every node event.
func (s Subjects) AllNodeEvents() string { return s.Prefix + ".evt.node.>" }

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
func (s Subjects) SchedCtl() string { return s.Prefix + ".sched.ctl" }

// Chaos actions.
const (
	ChaosKillAction    = "kill"
	ChaosHang          = "hang"
	ChaosPartition     = "partition"
	ChaosDelay         = "delay"
	ChaosDrop          = "drop"
	ChaosKillScheduler = "kill-scheduler"
)

// ChaosActions lists every chaos action, in the order the docs give them.
var ChaosActions = []string{ChaosKillAction, ChaosHang, ChaosPartition, ChaosDelay, ChaosDrop, ChaosKillScheduler}

// Scheduler lifecycle event types (published by its supervisor).
const (
	SchedUp   = "up"
	SchedDown = "down"
)
