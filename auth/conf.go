package auth

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/gpusched/gpusched/events"
)

// TLSFiles are a certificate, its key and the CA that verifies the other
// side, as PEM files.
type TLSFiles struct {
	Cert, Key, CA string
}

// ServerSettings say what the server configuration holds besides the
// users of the roles file.
type ServerSettings struct {
	// Prefix is the cluster's subject prefix.
	Prefix string
	// EventStream is the name of the JetStream stream of events (observers
	// and admins may read it).
	EventStream string
	// ControlKeys are public nkeys of control-plane users that are not in
	// the file (a cluster process makes one for itself at each start).
	ControlKeys []string
	// TLS, when set, secures the client port: every client connects with
	// TLS; with a CA, clients must also show a certificate it signed.
	TLS *TLSFiles
}

// ServerConfig renders f as a NATS server configuration: the accounts
// (the control account with JetStream, one per tenant), their users with
// the permissions of their roles, the control account's job services and
// event stream exported to the tenants and imported by them, and the
// client port's TLS. cluster loads it into its embedded server; for an
// external nats-server, `cluster auth init` writes it as nats-auth.conf to
// include in the server's own configuration.
func ServerConfig(f *File, s ServerSettings) string {
	var b strings.Builder
	if f != nil {
		writeAccounts(&b, f, s)
	}
	if s.TLS != nil {
		b.WriteString(tlsBlock(*s.TLS))
	}
	return b.String()
}

func writeAccounts(b *strings.Builder, f *File, s ServerSettings) {
	p := s.Prefix
	var control []User
	// importers are the accounts outside the control account (each
	// tenant's, each observer's, each admin's), sorted by name.
	var importers []string
	members := map[string][]User{}
	services := map[string][]string{} // account → the services it imports
	for _, u := range f.Users {
		account := UserAccount(u)
		if account == ControlAccount {
			control = append(control, u)
			continue
		}
		if _, ok := members[account]; !ok {
			importers = append(importers, account)
			services[account] = importedServices(u.Role, p, s.EventStream)
		}
		members[account] = append(members[account], u)
	}
	slices.Sort(importers)
	for _, k := range s.ControlKeys {
		control = append(control, User{Name: "control-plane", Role: Control, NKey: k})
	}
	// exports: each service subject once, to every account importing it,
	// in the order first asked for.
	var exported []string
	to := map[string][]string{}
	for _, account := range importers {
		for _, subj := range services[account] {
			if _, ok := to[subj]; !ok {
				exported = append(exported, subj)
			}
			to[subj] = append(to[subj], strconv.Quote(account))
		}
	}
	fmt.Fprintf(b, "# gpusched accounts, users and permissions for subject prefix %q (docs/SECURITY.md).\n", p)
	b.WriteString("# Generated from the roles file by gpusched: edit that file, not this one.\n")
	b.WriteString("accounts {\n")
	fmt.Fprintf(b, "  %s {\n    jetstream: enabled\n", ControlAccount)
	writeUsers(b, control, s)
	if len(importers) > 0 {
		b.WriteString("    exports: [\n")
		for _, subj := range exported {
			fmt.Fprintf(b, "      {service: %q, accounts: [%s]%s}\n", subj, strings.Join(to[subj], ", "), responseType(subj))
		}
		all := make([]string, len(importers))
		for i, a := range importers {
			all[i] = strconv.Quote(a)
		}
		fmt.Fprintf(b, "      {stream: %q, accounts: [%s]}\n", events.NewSubjects(p).AllEvents(), strings.Join(all, ", "))
		b.WriteString("    ]\n")
	}
	b.WriteString("  }\n")
	for _, account := range importers {
		fmt.Fprintf(b, "  %q {\n", account)
		// A tenant, an observer or an admin publishes requests only, each
		// at most MaxRequestBytes, headers aside: the server refuses more
		// (the cluster's own max_payload is 8 MiB, for snapshots and
		// describes).
		fmt.Fprintf(b, "    limits: {max_payload: %d}\n", TenantMaxPayload)
		writeUsers(b, members[account], s)
		b.WriteString("    imports: [\n")
		for _, subj := range services[account] {
			fmt.Fprintf(b, "      {service: {account: %s, subject: %q}}\n", ControlAccount, subj)
		}
		fmt.Fprintf(b, "      {stream: {account: %s, subject: %q}}\n", ControlAccount, events.NewSubjects(p).AllEvents())
		b.WriteString("    ]\n  }\n")
	}
	b.WriteString("}\n")
}

// responseType is the export option of a service subject answered with
// more than one message: a pull from the event stream (a batch, its
// heartbeats and its end).
func responseType(subject string) string {
	if strings.HasPrefix(subject, "$JS.API.CONSUMER.MSG.NEXT.") {
		return ", response_type: stream"
	}
	return ""
}

// TenantMaxPayload is the largest message a tenant's, an observer's or an
// admin's connection may publish: a request body's limit
// (events.MaxRequestBytes, 64 KiB) and room for headers (a Nats-Msg-Id).
const TenantMaxPayload = 64<<10 + 8<<10

// RouteTLSConfig renders the tls block of a NATS server's cluster block:
// routes between the servers of a NATS cluster verify each other against
// the CA. It is the client port's block too (ServerConfig).
func RouteTLSConfig(t TLSFiles) string { return tlsBlock(t) }

func tlsBlock(t TLSFiles) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tls {\n  cert_file: %q\n  key_file: %q\n", t.Cert, t.Key)
	if t.CA != "" {
		// verify: the other side must show a certificate the CA signed.
		fmt.Fprintf(&b, "  ca_file: %q\n  verify: true\n", t.CA)
	}
	b.WriteString("  timeout: 5\n}\n")
	return b.String()
}

func writeUsers(b *strings.Builder, users []User, s ServerSettings) {
	b.WriteString("    users: [\n")
	for _, u := range users {
		fmt.Fprintf(b, "      # %s (%s)\n      {", u.Name, u.Role)
		if u.NKey != "" {
			fmt.Fprintf(b, "nkey: %q", u.NKey)
		} else {
			fmt.Fprintf(b, "user: %q, password: %q", u.Name, u.Password)
		}
		if perms := RolePermissions(u.Role, s.Prefix, u.Node, s.EventStream); perms != nil {
			fmt.Fprintf(b, ", permissions: {publish: {allow: %s}, subscribe: {allow: %s}", quoteList(perms.Publish), quoteList(perms.Subscribe))
			if perms.Responses {
				// Each request received may be answered within the
				// server's default two minutes, once per control it
				// carries: a batch of controls (events.ControlBatch) is
				// one request answered once per control.
				fmt.Fprintf(b, ", allow_responses: {max: %d}", events.MaxBatchItems)
			}
			b.WriteString("}")
		}
		b.WriteString("}\n")
	}
	b.WriteString("    ]\n")
}

func quoteList(subjects []string) string {
	q := make([]string, len(subjects))
	for i, s := range subjects {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// Configure applies the server configuration of f (nil: no accounts,
// TLS only) and s to opts: the embedded server then authenticates every
// client, in-process ones too.
func Configure(opts *server.Options, f *File, s ServerSettings) error {
	if err := opts.ProcessConfigString(ServerConfig(f, s)); err != nil {
		return fmt.Errorf("server configuration from the roles file: %w", err)
	}
	return nil
}
