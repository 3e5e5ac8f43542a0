package auth

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nkeys"
	"go.yaml.in/yaml/v3"

	"github.com/gpusched/gpusched/model"
)

// File is a roles file (users.yaml): the users of one cluster and the role
// of each. It holds public keys and password hashes only; the seeds stay
// with their users.
type File struct {
	Users []User `yaml:"users"`
}

// User is one identity on the bus.
type User struct {
	// Name names the user in logs and in the file (and is the login of a
	// password user).
	Name string `yaml:"name"`
	Role Role   `yaml:"role"`
	// Tenant is a submitter's tenant: its jobs are that tenant's.
	Tenant string `yaml:"tenant,omitempty"`
	// Node is the node a node user acts as.
	Node string `yaml:"node,omitempty"`
	// GPUs is how many GPUs a node user's node may have (0: the cluster's
	// --node-max-gpus): the scheduler refuses GPU ids past it.
	GPUs int `yaml:"gpus,omitempty"`
	// NKey is the user's public nkey (U…); it signs in with the seed.
	NKey string `yaml:"nkey,omitempty"`
	// Password is a bcrypt hash ("$2a$…", e.g. from `nats server passwd`)
	// or, for trying things out, a plain password.
	Password string `yaml:"password,omitempty"`
}

// Load reads and checks the roles file at path.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Parse decodes and checks a roles file; an error names the user and the
// field at fault.
func Parse(data []byte) (*File, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("roles file: %v", err)
	}
	return &f, f.Check()
}

// Check says what is wrong with the file, naming the user and field.
func (f *File) Check() error {
	if len(f.Users) == 0 {
		return errors.New("roles file: no users (run `cluster auth init` to write one)")
	}
	seen := map[string]bool{}
	keys := map[string]string{}
	for i, u := range f.Users {
		at := fmt.Sprintf("users[%d]", i)
		if u.Name != "" {
			at = fmt.Sprintf("user %q", u.Name)
		}
		if !model.ValidToken(u.Name) {
			return fmt.Errorf("%s: name: use letters, digits, - and _ only", at)
		}
		if seen[u.Name] {
			return fmt.Errorf("%s: name: given twice", at)
		}
		seen[u.Name] = true
		if _, err := ParseRole(string(u.Role)); err != nil {
			return fmt.Errorf("%s: role: %v", at, err)
		}
		if (u.Role == Submitter) != (u.Tenant != "") {
			return fmt.Errorf("%s: tenant: a submitter needs one, and only a submitter has one", at)
		}
		if u.Tenant != "" && !model.ValidToken(u.Tenant) {
			return fmt.Errorf("%s: tenant %q: use letters, digits, - and _ only", at, u.Tenant)
		}
		if (u.Role == Node) != (u.Node != "") {
			return fmt.Errorf("%s: node: a node user needs one, and only a node user has one", at)
		}
		if u.Node != "" && !model.ValidToken(u.Node) {
			return fmt.Errorf("%s: node %q: use letters, digits, - and _ only", at, u.Node)
		}
		if u.GPUs != 0 && (u.Role != Node || u.GPUs < 0 || u.GPUs > MaxNodeGPUs) {
			return fmt.Errorf("%s: gpus: %d: only a node user has gpus, from 1 to %d", at, u.GPUs, MaxNodeGPUs)
		}
		switch {
		case (u.NKey == "") == (u.Password == ""):
			return fmt.Errorf("%s: give nkey or password (one of them)", at)
		case u.NKey != "" && !nkeys.IsValidPublicUserKey(u.NKey):
			return fmt.Errorf("%s: nkey %q: not a user's public nkey (U…); the seed (SU…) stays with the user", at, u.NKey)
		case u.NKey != "" && keys[u.NKey] != "":
			return fmt.Errorf("%s: nkey: the same key as user %q", at, keys[u.NKey])
		case strings.HasPrefix(u.Password, "$2") && len(u.Password) < 59:
			return fmt.Errorf("%s: password: looks like a truncated bcrypt hash", at)
		}
		keys[u.NKey] = u.Name
		if u.NKey == "" {
			delete(keys, "")
		}
	}
	return nil
}

// Marshal encodes the file as YAML, with a header saying what it is.
func (f *File) Marshal() ([]byte, error) {
	body, err := yaml.Marshal(f)
	if err != nil {
		return nil, err
	}
	return append([]byte(fileHeader), body...), nil
}

const fileHeader = `# gpusched roles file: who may do what on the cluster's bus (docs/SECURITY.md).
# Roles: observer, submitter (with a tenant), node (with a node, and optionally
# gpus: how many GPUs it may have), admin, control.
# nkey is a user's public key (its seed, SU…, stays with the user: --nkey FILE);
# password a bcrypt hash ("nats server passwd") or a plain password.
# The permissions of each role are fixed by gpusched; this file only names the users.
`

// MaxNodeGPUs is the most GPUs the roles file may give one node: what one
// heartbeat may name (core.MaxHeartbeatGPUs).
const MaxNodeGPUs = 1024

// NodeGPUs are the GPUs each node user's node may have, where the roles
// file says (gpus).
func (f *File) NodeGPUs() map[string]int {
	out := map[string]int{}
	for _, u := range f.Users {
		if u.Role == Node && u.GPUs > 0 {
			out[u.Node] = u.GPUs
		}
	}
	return out
}

// Tenants returns the tenant each account outside the control account
// acts for, for the scheduler (CallerTenant): a tenant account's tenant;
// "" for an observer's or admin's own account, which, like the control
// account, sees every tenant.
func (f *File) Tenants() map[string]string {
	m := map[string]string{}
	for _, u := range f.Users {
		switch u.Role {
		case Submitter:
			m[TenantAccount(u.Tenant)] = u.Tenant
		case Observer, Admin:
			m[UserAccount(u)] = ""
		}
	}
	return m
}
