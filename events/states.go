package events

// JobRunning is the state of a placed job that runs (job.started is its
// event); the other states are named by the job event types (JobQueued,
// JobCompleted …) that move a job into them.
const JobRunning = "running"

// JobStates are the states a job can be in, in lifecycle order: what
// job.list's "state" may name.
var JobStates = []string{JobSubmitted, JobQueued, JobPlaced, JobRunning, JobPreempted, JobCompleted, JobLost, JobRejected, JobCancelled}

// States of a job on a GPU (GPUJob.State).
const (
	// GPUJobReserved is a reservation not committed yet.
	GPUJobReserved = "reserved"
	// GPUJobRunning is a committed job.
	GPUJobRunning = "running"
)

// What changed on a GPU (GPUStatus.Change), and how a job left a GPU
// (EndedJob.Change).
const (
	ChangeUp        = "up"        // the actor started (gpu.up)
	ChangeRejoined  = "rejoined"  // back after a lost lease or a healed partition
	ChangeWoke      = "woke"      // a hang ended
	ChangeCommitted = "committed" // a reservation was committed
	ChangeAborted   = "aborted"   // a reservation was aborted
	ChangeExpired   = "expired"   // a reservation expired before its commit (EndedJob: placed, never ran)
	ChangeCompleted = "completed" // a job finished its work
	ChangePreempted = "preempted" // a job was stopped to make room
	ChangeReleased  = "released"  // a job was stopped by the scheduler for another reason
	ChangeFenced    = "fenced"    // EndedJob: stopped by the GPU itself when its lease ran out
	ChangeKilled    = "killed"    // the actor was killed (chaos)
	ChangeCrashed   = "crashed"   // gpu.down: the actor died
	// ChangeLeaseExpired is the scheduler's gpu.down (and node.down) when a
	// lease ran out.
	ChangeLeaseExpired = "lease-expired"
)

// What happened to a node (NodeLifecycle.Change), besides
// ChangeRejoined and ChangeLeaseExpired.
const NodeJoined = "joined"
