package events

import "time"

// Event types of the control plane's budget keeper (cluster), published on
// Subjects.SecurityEvent: a node of the roles file that published more
// events than its budget is cut off (shut out of the bus) for a cool-off,
// then readmitted.
const (
	NodeCutOff     = "node-cut-off"
	NodeReadmitted = "node-readmitted"
	// JobMinted is the scheduler's word that a node reported a job no one
	// submitted (neither the journal nor the predecessor scheduler knows
	// it): the job is stopped there, never run.
	JobMinted = "job-minted"
	// GPUsRefused is the scheduler's word that a node named more GPUs than
	// it may have (the roles file's gpus, or the cluster's
	// --node-max-gpus): the ones past its bound are not taken.
	GPUsRefused = "gpus-refused"
)

// RefusedGPUs is the data of a gpus-refused event: the node, its bound,
// and how many GPU ids the message that went past it named beyond it.
type RefusedGPUs struct {
	Node    string `json:"node"`
	Bound   int    `json:"bound"`
	Refused int    `json:"refused"`
}

// MintedJob is the data of a job-minted event: the job a node reported
// and where.
type MintedJob struct {
	JobID string `json:"job_id"`
	Node  string `json:"node"`
	GPU   string `json:"gpu"`
	// TenantClaimed is the tenant the node's report named (not believed).
	TenantClaimed string `json:"tenant_claimed,omitempty"`
}

// NodeBudget is the data of a node-cut-off or node-readmitted event.
type NodeBudget struct {
	Node string `json:"node"`
	// Budget is the budget the node is held to ("256KB/s,16MB,cool-off=1m0s").
	Budget string `json:"budget"`
	// Until is the wall time the node is shut out until (cut-off only).
	Until time.Time `json:"until,omitzero"`
	// Cuts counts the node's cut-offs in this run (each doubles the next
	// cool-off).
	Cuts int `json:"cuts"`
}

// ReaderRefused is the control plane's word that a consumer of the event
// stream made through an import (an observer's or an admin's account) was
// deleted: a push consumer, or one past the account's bound.
const ReaderRefused = "reader-refused"

// RefusedReader is the data of a reader-refused event.
type RefusedReader struct {
	Account  string `json:"account"`
	User     string `json:"user,omitempty"`
	Consumer string `json:"consumer"`
	Reason   string `json:"reason"`
}
