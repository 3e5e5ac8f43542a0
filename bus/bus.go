package bus

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Options say how to reach the bus.
type Options struct {
	// URLs is a comma-separated list of NATS server URLs (the servers of a
	// NATS cluster; the client fails over between them).
	URLs string
	// Creds is a credentials file (JWT and nkey seed); NKey an nkey seed
	// file; User and Password a user's login; Token a bearer token.
	Creds, NKey, User, Password, Token string
	// TLSCert and TLSKey are a client certificate and its key; TLSCA the
	// CA that signed the server's certificate.
	TLSCert, TLSKey, TLSCA string
}

// AddFlags registers the options as flags on fs, named like the nats
// CLI's: --nats, --creds, --nkey, --user, --password, --token, --tlscert,
// --tlskey, --tlsca. url is --nats's default.
func (o *Options) AddFlags(fs *flag.FlagSet, url, usage string) {
	fs.StringVar(&o.URLs, "nats", url, usage)
	fs.StringVar(&o.Creds, "creds", "", "NATS credentials file (JWT and nkey seed)")
	fs.StringVar(&o.NKey, "nkey", "", "NATS nkey seed file")
	fs.StringVar(&o.User, "user", "", "NATS user")
	fs.StringVar(&o.Password, "password", "", "NATS password")
	fs.StringVar(&o.Token, "token", "", "NATS token")
	fs.StringVar(&o.TLSCert, "tlscert", "", "TLS client certificate file")
	fs.StringVar(&o.TLSKey, "tlskey", "", "TLS client key file")
	fs.StringVar(&o.TLSCA, "tlsca", "", "CA file that signed the NATS server's certificate")
}

// Check says what is wrong with the options, naming the flag.
func (o Options) Check() error {
	if strings.TrimSpace(o.URLs) == "" {
		return errors.New("--nats: give the NATS URL, e.g. nats://127.0.0.1:4222 (several: comma-separated)")
	}
	for _, u := range strings.Split(o.URLs, ",") {
		u = strings.TrimSpace(u)
		if !strings.Contains(u, "://") && strings.Contains(u, "/") {
			return fmt.Errorf("--nats %q: want nats://HOST:PORT", u)
		}
	}
	if err := o.CheckFiles(); err != nil {
		return err
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return errors.New("--tlscert and --tlskey go together")
	}
	if o.Password != "" && o.User == "" {
		return errors.New("--password needs --user")
	}
	return nil
}

// CheckFiles says which file the options name does not exist, naming its
// flag (Check does it too; a cluster's embedded server takes the TLS
// files without the rest).
func (o Options) CheckFiles() error {
	for flagName, path := range map[string]string{"creds": o.Creds, "nkey": o.NKey, "tlscert": o.TLSCert, "tlskey": o.TLSKey, "tlsca": o.TLSCA} {
		if path == "" {
			continue
		}
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("--%s %q: %v", flagName, path, errors.Unwrap(err))
		}
	}
	return nil
}

// NATSOptions are the nats.Connect options for o (besides the name); a
// process on the bus reconnects for ever.
func (o Options) NATSOptions() ([]nats.Option, error) {
	opts := []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond), nats.RetryOnFailedConnect(true),
		// A node shut out for passing its event budget is refused until
		// its cool-off ends: it keeps trying, and comes back then (by
		// default nats.go gives up after the same refusal twice).
		nats.IgnoreAuthErrorAbort()}
	if o.Creds != "" {
		opts = append(opts, nats.UserCredentials(o.Creds))
	}
	if o.NKey != "" {
		opt, err := nats.NkeyOptionFromSeed(o.NKey)
		if err != nil {
			return nil, fmt.Errorf("--nkey %s: %v", o.NKey, err)
		}
		opts = append(opts, opt)
	}
	if o.User != "" {
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	if o.Token != "" {
		opts = append(opts, nats.Token(o.Token))
	}
	if o.TLSCert != "" {
		opts = append(opts, nats.ClientCert(o.TLSCert, o.TLSKey))
	}
	if o.TLSCA != "" {
		opts = append(opts, nats.RootCAs(o.TLSCA))
	}
	return opts, nil
}

// Connect connects to the bus as name, waiting up to timeout for a first
// server to answer (it keeps reconnecting after that). Credentials the
// server refuses and certificates that do not verify end the wait at
// once, with the server's or TLS's reason.
func (o Options) Connect(name string, timeout time.Duration, extra ...nats.Option) (*nats.Conn, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	opts, err := o.NATSOptions()
	if err != nil {
		return nil, err
	}
	connected := make(chan struct{}, 1)
	refused := make(chan error, 1)
	var mu sync.Mutex
	var lastErr error
	opts = append(opts, nats.Name(name), nats.ConnectHandler(func(*nats.Conn) {
		select {
		case connected <- struct{}{}:
		default:
		}
	}), nats.ReconnectErrHandler(func(_ *nats.Conn, err error) {
		mu.Lock()
		lastErr = err
		mu.Unlock()
		if Refusal(err) {
			select {
			case refused <- err:
			default:
			}
		}
	}), nats.ErrorHandler(HandleErrors))
	opts = append(opts, extra...)
	nc, err := nats.Connect(o.URLs, opts...)
	if err != nil {
		return nil, fmt.Errorf("NATS at %s: %v", o.URLs, Explain(err))
	}
	if nc.IsConnected() {
		return nc, nil
	}
	fail := func(err error) (*nats.Conn, error) {
		nc.Close()
		return nil, err
	}
	select {
	case <-connected:
		return nc, nil
	case err := <-refused:
		return fail(fmt.Errorf("NATS at %s refused the connection: %v", o.URLs, Explain(err)))
	case <-time.After(timeout):
		mu.Lock()
		last := lastErr
		mu.Unlock()
		if last != nil {
			return fail(fmt.Errorf("NATS at %s: no server answered within %s (last error: %v)", o.URLs, timeout, Explain(last)))
		}
		return fail(fmt.Errorf("NATS at %s: no server answered within %s", o.URLs, timeout))
	}
}

// Refusal says whether a connection attempt failed for good: the server
// refused the credentials, or TLS failed (an untrusted or unsuitable
// certificate on either side). Retrying would fail the same way.
func Refusal(err error) bool {
	if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) ||
		errors.Is(err, nats.ErrNkeysNotSupported) || errors.Is(err, nats.ErrSecureConnRequired) || errors.Is(err, nats.ErrSecureConnWanted) {
		return true
	}
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var host x509.HostnameError
	var verify *tls.CertificateVerificationError
	if errors.As(err, &unknown) || errors.As(err, &invalid) || errors.As(err, &host) || errors.As(err, &verify) {
		return true
	}
	return tlsFailure(err) || strings.Contains(strings.ToLower(err.Error()), "authorization violation")
}

// Explain adds what to do to a refusal a person may not read at once.
func Explain(err error) error {
	switch {
	case errors.Is(err, nats.ErrAuthorization) || strings.Contains(strings.ToLower(err.Error()), "authorization violation"):
		return fmt.Errorf("%w (the server does not know these credentials: check --nkey, --creds, --user/--password; docs/SECURITY.md)", err)
	case tlsFailure(err):
		return fmt.Errorf("%w (TLS: give the CA that signed the server's certificate with --tlsca, and a client certificate it signed with --tlscert/--tlskey when the server asks for one)", err)
	}
	return err
}

// tlsFailure says whether err is TLS's: a certificate that does not
// verify, or a handshake the other side broke off (it wanted a client
// certificate it could verify).
func tlsFailure(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "x509:") || strings.Contains(msg, "tls: ") || strings.Contains(msg, "tls error") ||
		strings.Contains(msg, "TLS handshake")
}

// DeniedError is a publish or subscription the server refused because
// the connection's credentials do not allow it.
type DeniedError struct {
	// Op is "publish" or "subscribe"; Subject what was refused.
	Op, Subject string
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("permission denied by the NATS server: %s to %q is not allowed for these credentials (their role's permissions: docs/SECURITY.md)", e.Op, e.Subject)
}

// Is makes a DeniedError an nats.ErrPermissionViolation.
func (e *DeniedError) Is(target error) bool { return target == nats.ErrPermissionViolation }

// conns holds the denial tracker of each connection HandleErrors serves.
var conns sync.Map // *nats.Conn → *denials

// tracker is nc's denial tracker.
func tracker(nc *nats.Conn) *denials {
	if v, ok := conns.Load(nc); ok {
		return v.(*denials)
	}
	conns.Range(func(k, _ any) bool { // forget closed connections
		if k.(*nats.Conn).IsClosed() {
			conns.Delete(k)
		}
		return true
	})
	v, _ := conns.LoadOrStore(nc, &denials{waiting: map[string][]chan error{}})
	return v.(*denials)
}

// HandleErrors is a nats.ErrHandler that hands the permission violations
// the server reports on a connection to the Requests waiting for them.
// Connect installs it; a connection made otherwise can install it with
// nats.ErrorHandler(bus.HandleErrors).
func HandleErrors(nc *nats.Conn, sub *nats.Subscription, err error) {
	tracker(nc).handle(err)
}

// denials hands the permission violations a server reports to the
// requests waiting on their subjects.
type denials struct {
	mu      sync.Mutex
	waiting map[string][]chan error
}

var violationRE = regexp.MustCompile(`(?i)for (publish|subscription) to "([^"]+)"`)

func (d *denials) handle(err error) {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return
	}
	m := violationRE.FindStringSubmatch(err.Error())
	if m == nil {
		return
	}
	op := "publish"
	if strings.EqualFold(m[1], "subscription") {
		op = "subscribe"
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, ch := range d.waiting[m[2]] {
		select {
		case ch <- &DeniedError{Op: op, Subject: m[2]}:
		default:
		}
	}
}

func (d *denials) wait(subject string) chan error {
	ch := make(chan error, 1)
	d.mu.Lock()
	d.waiting[subject] = append(d.waiting[subject], ch)
	d.mu.Unlock()
	return ch
}

func (d *denials) done(subject string, ch chan error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.waiting[subject] = slices.DeleteFunc(d.waiting[subject], func(c chan error) bool { return c == ch })
	if len(d.waiting[subject]) == 0 {
		delete(d.waiting, subject)
	}
}

// Denials returns a channel that receives a *DeniedError when the server
// refuses a publish to subject on nc (a connection whose errors
// HandleErrors sees), for callers whose requests a library makes; stop
// ends the watch.
func Denials(nc *nats.Conn, subject string) (denied <-chan error, stop func()) {
	d := tracker(nc)
	ch := d.wait(subject)
	return ch, func() { d.done(subject, ch) }
}

// Request is nc.Request that returns a *DeniedError as soon as the server
// refuses the publish for the credentials' permissions (a refused request
// otherwise just times out), on a connection whose errors HandleErrors
// sees (every connection Connect makes).
func Request(nc *nats.Conn, subject string, data []byte, timeout time.Duration) (*nats.Msg, error) {
	d := tracker(nc)
	denied := d.wait(subject)
	defer d.done(subject, denied)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	type answer struct {
		msg *nats.Msg
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		m, err := nc.RequestWithContext(ctx, subject, data)
		if errors.Is(err, context.DeadlineExceeded) {
			err = nats.ErrTimeout
		}
		answered <- answer{m, err}
	}()
	select {
	case a := <-answered:
		return a.msg, a.err
	case err := <-denied:
		cancel()
		return nil, err
	}
}
