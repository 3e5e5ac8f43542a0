package observer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/bus"
	"github.com/gpusched/gpusched/events"
)

// Control sends a dashboard's commands to the cluster: the same public
// requests any NATS client can send.
type Control struct {
	nc       *nats.Conn
	subjects events.Subjects
	timeout  time.Duration
}

// NewControl returns a Control on nc.
func NewControl(nc *nats.Conn, subjects events.Subjects) *Control {
	return &Control{nc: nc, subjects: subjects, timeout: 5 * time.Second}
}

// request sends body on subject and decodes the reply into out, turning an
// error reply into an error that names the field.
func (c *Control) request(subject string, body []byte, out any) error {
	msg, err := bus.Request(c.nc, subject, body, c.timeout)
	if err != nil {
		return fmt.Errorf("%s: %w", subject, err)
	}
	var e events.ErrorReply
	if json.Unmarshal(msg.Data, &e) == nil && e.Error != nil {
		return fmt.Errorf("%s: %s", e.Error.Field, e.Error.Message)
	}
	return json.Unmarshal(msg.Data, out)
}

// Strategy switches the placement policy ("" only reads it).
func (c *Control) Strategy(policy string) (events.StrategyReply, error) {
	return c.SetStrategy(events.StrategyRequest{Policy: policy})
}

// SetStrategy switches what req names (policy, queue order, filters,
// oversubscription; an empty request reads them) and answers what is in
// force.
func (c *Control) SetStrategy(req events.StrategyRequest) (events.StrategyReply, error) {
	var rep events.StrategyReply
	b, _ := json.Marshal(req)
	err := c.request(c.subjects.SchedStrategy(), b, &rep)
	return rep, err
}

// Submit submits a job spec (the JSON of job.submit). A spec without a
// job_id gets one (a new UUID), so that a submission not answered in time
// is sent again as the same job (the scheduler answers a repeated job_id
// as it answered the first), up to submitAttempts times.
func (c *Control) Submit(spec []byte) (events.SubmitReply, error) {
	var rep events.SubmitReply
	var req events.SubmitRequest
	if fe := events.DecodeStrict(spec, &req); fe != nil {
		return rep, fmt.Errorf("%s: %s", fe.Field, fe.Message)
	}
	if req.JobID == "" {
		req.JobID = uuid.NewString()
	}
	body, err := json.Marshal(req)
	if err != nil {
		return rep, err
	}
	for attempt := 0; attempt < submitAttempts; attempt++ {
		if err = c.request(c.subjects.JobSubmit(), body, &rep); !errors.Is(err, nats.ErrTimeout) {
			return rep, err
		}
	}
	return rep, err
}

// submitAttempts is how many times a dashboard sends a submission that is
// not answered in time.
const submitAttempts = 3

// Kill crashes a GPU actor (chaos.kill).
func (c *Control) Kill(gpu string) (events.ChaosKillReply, error) {
	var rep events.ChaosKillReply
	b, _ := json.Marshal(events.ChaosRequest{GPU: gpu, Reason: "killed from a dashboard"})
	err := c.request(c.subjects.ChaosKill(), b, &rep)
	return rep, err
}

// Explain asks why a job waits, or how it was placed.
func (c *Control) Explain(jobID string) (events.Decision, error) {
	var rep events.Decision
	b, _ := json.Marshal(events.JobRef{JobID: jobID})
	err := c.request(c.subjects.SchedExplain(), b, &rep)
	return rep, err
}

// numericFields are the job-spec fields a short job line gives as numbers.
var numericFields = map[string]bool{"util": true, "gpus": true, "cpu": true, "gpu_milli": true}

// ParseJobLine turns a short job line, "name=bert vram=20GB util=60
// duration=30m priority=high", into the JSON of job.submit; a line that
// starts with "{" is taken as that JSON. Either is decoded as a submission
// (events.SubmitRequest) here, so an unknown, repeated or mistyped field is
// named at once; the cluster validates the values and names a bad one in
// its reply.
func ParseJobLine(line string) ([]byte, error) {
	line = strings.TrimSpace(line)
	if line == "" {
		return nil, fmt.Errorf("empty job: give at least vram=..., e.g. name=bert vram=20GB util=60 duration=30m")
	}
	body := []byte(line)
	if !strings.HasPrefix(line, "{") {
		fields := map[string]any{}
		for _, tok := range strings.Fields(line) {
			k, v, ok := strings.Cut(tok, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("%q: want field=value", tok)
			}
			if _, twice := fields[k]; twice {
				return nil, fmt.Errorf("%s: given twice", k)
			}
			switch {
			case numericFields[k]:
				n, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return nil, fmt.Errorf("%s: %q is not a number", k, v)
				}
				fields[k] = n
			case k == "models":
				fields[k] = strings.Split(v, ",")
			case k == "preemptible":
				fields[k] = v == "true" || v == "yes" || v == "1"
			default:
				fields[k] = v
			}
		}
		body, _ = json.Marshal(fields)
	}
	var spec events.SubmitRequest
	if fe := events.DecodeStrict(body, &spec); fe != nil {
		return nil, fe
	}
	return json.Marshal(spec)
}
