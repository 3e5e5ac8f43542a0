package auth

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpusched/gpusched/events"
)

// Role is what a user may do on the bus.
type Role string

// The roles. A role's permissions are RolePermissions; docs/SECURITY.md
// has them as a table.
const (
	// Observer may subscribe to events, request snapshots and read the
	// event history; nothing else.
	Observer Role = "observer"
	// Submitter may also submit, cancel, get, list and explain its own
	// tenant's jobs (it lives in its tenant's account).
	Submitter Role = "submitter"
	// Node may act only as the GPU and node actors of the node it names:
	// receive that node's control messages, answer them, and publish that
	// node's events.
	Node Role = "node"
	// Admin may do what an observer and a submitter of every tenant may,
	// and switch the policy and send chaos commands.
	Admin Role = "admin"
	// Control is the control plane (scheduler, generator, chaos responder,
	// the journal): everything in the control account.
	Control Role = "control"
)

// Roles lists the roles in the order the docs give them.
var Roles = []Role{Observer, Submitter, Node, Admin, Control}

// ParseRole returns the role named s.
func ParseRole(s string) (Role, error) {
	r := Role(strings.TrimSpace(s))
	if slices.Contains(Roles, r) {
		return r, nil
	}
	names := make([]string, len(Roles))
	for i, r := range Roles {
		names[i] = string(r)
	}
	return "", fmt.Errorf("unknown role %q: use %s", s, strings.Join(names, ", "))
}

// ControlAccount is the account of the control plane and the nodes: the
// one that holds the job services, the actors' control subjects and
// JetStream.
const ControlAccount = "GPUSCHED"

// UserAccount is the account u signs into. The control plane and the
// nodes share ControlAccount, the only account whose event subjects the
// event stream stores and the event budgets count; a tenant's submitters
// share TenantAccount; each observer and each admin has an account of
// its own (ObserverAccount, AdminAccount) that imports what its role may
// use. So a subject an observer or admin names as a reply — a pull from
// the event stream, a snapshot — is one of its own account's: the server
// delivers there, never under the control account's event subjects,
// where it would be stored, charged to a node and judged as an event
// (docs/SECURITY.md).
func UserAccount(u User) string {
	switch u.Role {
	case Submitter:
		return TenantAccount(u.Tenant)
	case Observer:
		return ObserverAccount(u.Name)
	case Admin:
		return AdminAccount(u.Name)
	}
	return ControlAccount
}

// ObserverAccount is observer user name's own account.
func ObserverAccount(name string) string { return "OBSERVER_" + name }

// AdminAccount is admin user name's own account.
func AdminAccount(name string) string { return "ADMIN_" + name }

// importedServices are the request subjects an account of role imports
// from ControlAccount: a tenant's services; an observer's snapshot and
// the event history; an admin's every request and the event history.
// (Each role's permissions, RolePermissions, allow no more.)
func importedServices(role Role, prefix, stream string) []string {
	sj := events.NewSubjects(prefix)
	switch role {
	case Submitter:
		return sj.TenantServices()
	case Observer:
		return append([]string{sj.ClusterSnapshot()}, eventHistory(stream)...)
	case Admin:
		return append([]string{sj.JobSubmit(), sj.JobCancel(), sj.JobGet(), sj.JobList(), sj.SchedStrategy(),
			sj.SchedExplain(), sj.ClusterSnapshot(), sj.AllChaos()}, eventHistory(stream)...)
	}
	return nil
}

// TenantAccount is the account of tenant's submitters: it imports the job
// services from ControlAccount and the event stream, and nothing else.
func TenantAccount(tenant string) string { return "TENANT_" + tenant }

// NodeInboxPrefix is the inbox prefix of a `cluster node` process for node:
// its permissions let it read replies there and nowhere else.
func NodeInboxPrefix(node string) string { return "_INBOX_NODE." + node }

// Permissions are the subjects a user may publish and subscribe to; a
// nil Permissions allows everything. Responses lets it answer the
// requests it receives (NATS's allow_responses), whatever their reply
// subject.
type Permissions struct {
	Publish, Subscribe []string
	Responses          bool
}

// TenantServices are the request subjects under prefix a tenant's
// account imports from the control account: what a submitter may ask
// (events.Subjects.TenantServices).
func TenantServices(prefix string) []string { return events.NewSubjects(prefix).TenantServices() }

// eventHistory are the JetStream API subjects that read the event stream
// (observer log --since and the like) and nothing else: the stream's info,
// an ordered or durable consumer on it, its messages, acks and flow
// control. The job journal's bucket is not among them.
func eventHistory(stream string) []string {
	return []string{
		"$JS.API.INFO",
		"$JS.API.STREAM.INFO." + stream,
		"$JS.API.CONSUMER.CREATE." + stream + ".>",
		"$JS.API.CONSUMER.DURABLE.CREATE." + stream + ".>",
		"$JS.API.CONSUMER.INFO." + stream + ".>",
		"$JS.API.CONSUMER.DELETE." + stream + ".>",
		"$JS.API.CONSUMER.MSG.NEXT." + stream + ".>",
		"$JS.ACK." + stream + ".>",
		"$JS.FC." + stream + ".>",
	}
}

// RolePermissions are the permissions of role under prefix; node is the
// node a Node user acts as, stream the name of the event stream (see
// durable.EventStream). Control has none: it may do everything in its
// account.
func RolePermissions(role Role, prefix, node, stream string) *Permissions {
	sj := events.NewSubjects(prefix)
	switch role {
	case Observer:
		return &Permissions{
			Publish:   append([]string{sj.ClusterSnapshot()}, eventHistory(stream)...),
			Subscribe: []string{sj.AllEvents(), "_INBOX.>"},
		}
	case Submitter:
		return &Permissions{Publish: sj.TenantServices(), Subscribe: []string{sj.AllEvents(), "_INBOX.>"}}
	case Node:
		return &Permissions{
			// Its GPUs' events and its heartbeat; the snapshot that tells
			// it the cluster's clock. Answers to control messages go to
			// the scheduler's inboxes: Responses.
			Publish: []string{sj.NodeGPUEvents(node), sj.NodeHeartbeat(node), sj.ClusterSnapshot()},
			// sched.up: a new scheduler, which the node heartbeats to at once.
			Subscribe: []string{sj.NodeGPUs(node), sj.NodeSubjects(node), NodeInboxPrefix(node) + ".>", sj.SchedEvent(events.SchedUp)},
			Responses: true,
		}
	case Admin:
		return &Permissions{
			Publish: append([]string{sj.AllJobRequests(), sj.SchedStrategy(), sj.SchedExplain(),
				sj.ClusterSnapshot(), sj.AllChaos()}, eventHistory(stream)...),
			Subscribe: []string{sj.AllEvents(), "_INBOX.>"},
		}
	}
	return nil
}
