// Package auth owns who may do what on a cluster's bus: the roles
// (observer, submitter, node, admin, control) and the NATS permissions each
// role stands for, the roles file that names the users (users.yaml), the
// NATS server configuration made from it (accounts, users, permissions,
// service imports for tenants, TLS), the identity a request carries once
// the server has vouched for it (Caller), and `cluster auth init`, which
// writes a roles file, a key per user and a self-signed TLS set.
//
// Enforcement is the NATS server's: a publish or subscription a role does
// not allow is refused by the server before it reaches an actor. What a
// subject cannot express — whose job a cancel names — is decided from the
// account the server puts in a request's Nats-Request-Info header: each
// tenant is an account of its own that imports the control plane's job
// services, so the header names the tenant and cannot be forged.
package auth
