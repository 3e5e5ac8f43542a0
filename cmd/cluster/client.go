package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/bus"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/observer"
)

// The client commands (get, cancel, explain, list, snapshot) print
// sentences and tables with names, GB and times by default, the replies'
// JSON with --json; a job is named by its id or, where it is unique, its
// name; flags may come before or after the job.

// parseAround parses fs over args whose positional arguments may sit
// among the flags (cluster explain bert-1 --nats URL), returning them.
func parseAround(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// client is a connection to the cluster for one command.
type client struct {
	nc *nats.Conn
	s  events.Subjects
}

func dial(o *bus.Options, prefix string) (*client, error) {
	nc, err := o.Connect("gpusched-cli", 5*time.Second, nats.RetryOnFailedConnect(false), nats.MaxReconnects(0))
	if err != nil {
		if strings.Contains(err.Error(), "--") {
			return nil, err
		}
		return nil, fmt.Errorf("cannot reach the cluster: %v (is `cluster` running?)", err)
	}
	return &client{nc: nc, s: events.NewSubjects(prefix)}, nil
}

// call sends body on subject and decodes the reply into out (raw, when
// out is a *json.RawMessage); an error reply is the error.
func (c *client) call(subject string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	msg, err := bus.Request(c.nc, subject, b, 5*time.Second)
	switch {
	case errors.Is(err, nats.ErrPermissionViolation):
		return err
	case errors.Is(err, nats.ErrTimeout):
		// Someone took the request and did not answer: the cluster runs.
		what := "the cluster received it and did not answer within 5 s"
		if c.s.IsChaos(subject) {
			what += " (a GPU that is hung or cut off answers nothing, and takes no other fault until it is back)"
		}
		return fmt.Errorf("%s: %s", subject, what)
	case err != nil:
		return fmt.Errorf("%s: %w (is a cluster with this prefix running?)", subject, err)
	}
	var probe struct {
		Error *model.FieldError `json:"error"`
	}
	json.Unmarshal(msg.Data, &probe)
	if probe.Error != nil {
		return fmt.Errorf("refused: %s", probe.Error.Error())
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], msg.Data...)
		return nil
	}
	return json.Unmarshal(msg.Data, out)
}

// resolve is the job named by idOrName: the job with that id, else the
// one job whose name it is (an error says when no job or several have
// it), as job.get answers it.
func (c *client) resolve(idOrName string) (events.JobInfo, error) {
	var j events.JobInfo
	err := c.call(c.s.JobGet(), events.JobRef{JobID: idOrName}, &j)
	if err == nil || !strings.Contains(err.Error(), "no job") {
		return j, err
	}
	var ids []string
	for page, pages := 0, 1; page < pages; page++ {
		var rep events.JobListReply
		if err := c.call(c.s.JobList(), events.JobListRequest{Page: page}, &rep); err != nil {
			return j, err
		}
		pages = rep.Pages
		for _, j := range rep.Jobs {
			if j.Name == idOrName {
				ids = append(ids, j.JobID)
			}
		}
	}
	switch len(ids) {
	case 0:
		return j, fmt.Errorf("no job has the id or the name %q", idOrName)
	case 1:
		return j, c.call(c.s.JobGet(), events.JobRef{JobID: ids[0]}, &j)
	}
	return j, fmt.Errorf("%d jobs are named %q (ids %s): give the id", len(ids), idOrName, strings.Join(ids, ", "))
}

// ask sends one request on the subject subject names and returns the
// reply, or, asJSON, prints it and returns nil.
func ask(o *bus.Options, prefix string, subject func(events.Subjects) string, body any, asJSON bool) (json.RawMessage, error) {
	c, err := dial(o, prefix)
	if err != nil {
		return nil, err
	}
	defer c.nc.Close()
	var raw json.RawMessage
	if err := c.call(subject(c.s), body, &raw); err != nil {
		return nil, err
	}
	if asJSON {
		return nil, printJSON(os.Stdout, raw)
	}
	return raw, nil
}

func printJSON(out io.Writer, raw json.RawMessage) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(raw)
}

// jobCommand is cluster get, cancel and explain.
func jobCommand(cmd string, args []string) error {
	fs := newFlags("cluster " + cmd)
	url, prefix := clientFlags(fs)
	asJSON := fs.Bool("json", false, "print the reply's JSON instead of sentences")
	pos, err := parseAround(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("usage: cluster %s JOB (its id, or its name where no other job has it; flags before or after)", cmd)
	}
	c, err := dial(url, *prefix)
	if err != nil {
		return err
	}
	defer c.nc.Close()
	job, err := c.resolve(pos[0])
	if err != nil {
		return err
	}
	if cmd == "get" && !*asJSON {
		fmt.Print(observer.JobText(job)) // resolve read it
		return nil
	}
	subject := map[string]string{"get": c.s.JobGet(), "cancel": c.s.JobCancel(), "explain": c.s.SchedExplain()}[cmd]
	var raw json.RawMessage
	if err := c.call(subject, events.JobRef{JobID: job.JobID}, &raw); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(os.Stdout, raw)
	}
	switch cmd {
	case "cancel":
		var j events.JobInfo
		if err := json.Unmarshal(raw, &j); err != nil {
			return printJSON(os.Stdout, raw)
		}
		fmt.Printf("%s (%s) is %s.\n", j.Name, j.JobID, j.State)
	default:
		var d events.Decision
		if err := json.Unmarshal(raw, &d); err != nil {
			return printJSON(os.Stdout, raw)
		}
		fmt.Print(observer.ExplainText(job.Name, d))
	}
	return nil
}

// list is cluster list: a table of jobs, oldest submission first.
func list(args []string) error {
	fs := newFlags("cluster list")
	url, prefix := clientFlags(fs)
	state := fs.String("state", "", "only jobs in this state (queued, running, completed...)")
	tenant := fs.String("tenant", "", "only this tenant's jobs")
	page := fs.Int("page", 0, "page")
	asJSON := fs.Bool("json", false, "print the reply's JSON instead of a table")
	if _, err := parseAround(fs, args); err != nil {
		return err
	}
	raw, err := ask(url, *prefix, func(s events.Subjects) string { return s.JobList() },
		events.JobListRequest{State: *state, Tenant: *tenant, Page: *page}, *asJSON)
	if err != nil || raw == nil {
		return err
	}
	var rep events.JobListReply
	if err := json.Unmarshal(raw, &rep); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tPRIORITY\tTENANT\tGPUS\tVRAM\tDONE\tWHERE / WHY\tID")
	for _, j := range rep.Jobs {
		done := ""
		if j.WorkS > 0 {
			done = fmt.Sprintf("%.0f %%", 100*j.ProgressS/j.WorkS)
		}
		where := strings.Join(j.GPUIDs, ",")
		if j.State == events.JobQueued {
			where = j.Reason
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", j.Name, j.State, j.Priority, j.Tenant, j.GPUs, observer.JobVRAM(j), done, where, j.JobID)
	}
	tw.Flush()
	fmt.Printf("%s on page %d of %d (%d in all)\n", observer.Count(len(rep.Jobs), "job"), rep.Page, max(rep.Pages, 1), rep.Total)
	return nil
}

// snapshot is cluster snapshot: the cluster's summary, GPUs and jobs as
// the text view shows them.
func snapshot(args []string) error {
	fs := newFlags("cluster snapshot")
	url, prefix := clientFlags(fs)
	page := fs.Int("page", 0, "page")
	asJSON := fs.Bool("json", false, "print the reply's JSON instead of the text view")
	if _, err := parseAround(fs, args); err != nil {
		return err
	}
	raw, err := ask(url, *prefix, func(s events.Subjects) string { return s.ClusterSnapshot() }, events.SnapshotRequest{Page: *page}, *asJSON)
	if err != nil || raw == nil {
		return err
	}
	var snap events.Snapshot
	if err := json.Unmarshal(raw, &snap); err != nil {
		return err
	}
	observer.Render(os.Stdout, &snap, nil, len(snap.GPUs))
	if snap.Pages > 1 {
		fmt.Printf("\npage %d of %d (--page N for the others)\n", snap.Page, snap.Pages)
	}
	return nil
}
