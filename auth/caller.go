package auth

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// RefusalLog is log for what a sender can repeat at will (a replayed
// message, a request with a reply subject the cluster does not answer on):
// the first of each message a minute is written, the repeats are dropped,
// so a flood of refused messages costs a log line a minute, not one each.
func RefusalLog(log *zap.Logger) *zap.Logger {
	return log.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewSamplerWithOptions(c, time.Minute, 1, 0)
	}))
}

// RequestInfoHeader is the header a NATS server puts on a request that
// crossed a service import: JSON whose "acc" is the account of the client
// that sent it. The server sets it itself, replacing any a client wrote.
const RequestInfoHeader = "Nats-Request-Info"

// CallerTenant is the tenant whose credentials sent a request with header
// h: "" for the control account (a request that crossed no import: the
// control plane, a node) and for an observer's or admin's own account,
// which may see every tenant. tenants maps the accounts outside the
// control account to their tenants (File.Tenants); nil means the control
// plane has no roles file, and then a request that crossed an import from
// another account is refused (its tenant cannot be told), while one
// without the header is the control account's as before.
func CallerTenant(h nats.Header, tenants map[string]string) (string, error) {
	raw := h.Get(RequestInfoHeader)
	if raw == "" {
		return "", nil
	}
	var info struct {
		Account string `json:"acc"`
	}
	if err := json.Unmarshal([]byte(raw), &info); err != nil {
		return "", fmt.Errorf("the server's %s header does not decode: %v", RequestInfoHeader, err)
	}
	if info.Account == ControlAccount {
		return "", nil
	}
	if tenants == nil {
		return "", fmt.Errorf("a request from account %q, and this control plane has no roles file to tell its tenant: start it with --auth", info.Account)
	}
	if t, ok := tenants[info.Account]; ok {
		return t, nil
	}
	return "", fmt.Errorf("account %q is not a tenant of this cluster (see the roles file)", info.Account)
}
