package scheduler

import "time"

// LeaderRenewEvery, LeaderSelfFence and LeaderTakeOver divide a lease
// between a control plane that leads the job journal and its standby: the
// leader renews six times a lease; a leader whose renewals the store has
// not confirmed for half a lease stops placing by itself; a standby takes
// over after three quarters of a lease without a renewal it saw. The
// quarter between them is the margin that keeps two schedulers from
// placing at once (the standby counts from when it saw a renewal stored,
// which is after the leader sent it). Several renewals fit in the half
// lease, so one lost to a blip deposes no one. A GPU stops its own jobs
// four fifths of a lease after the last heartbeat granted (actors/gpu's
// fenceMargin), which may come before the take-over: a failover costs the
// running jobs their work since their last checkpoint, never a double run.
func LeaderRenewEvery(lease time.Duration) time.Duration { return lease / 6 }

// LeaderSelfFence is how long a leader places without a confirmed
// renewal: half a lease (LeaderRenewEvery).
func LeaderSelfFence(lease time.Duration) time.Duration { return lease / 2 }

// LeaderTakeOver is how long a standby waits without a renewal before it
// takes the journal over: three quarters of a lease (LeaderRenewEvery).
func LeaderTakeOver(lease time.Duration) time.Duration { return lease * 3 / 4 }
