package main

import (
	"flag"
	"fmt"
	"strings"
)

// commandHelp is a command's help: its usage line and an example, printed
// above its flags by -h.
type commandHelp struct {
	usage   string
	example string
}

// helps holds every command's help, by the flag set's name.
var helps = map[string]commandHelp{
	"cluster run": {"cluster [run] [flags]",
		"cluster --policy spread --observe        # the demo cluster, the live view in this terminal\n" +
			"  cluster --fresh --gpus 4xA100-40GB,4xV100-16GB --policy best-fit"},
	"cluster submit": {"cluster submit --name NAME --vram SIZE --duration D [flags]",
		"cluster submit --name bert --vram 20GB --util 60 --duration 30m --priority high"},
	"cluster get":     {"cluster get JOB [--json]   (JOB: its id, or its name where unique)", "cluster get BERT-train-2   # state, placement, progress and history"},
	"cluster cancel":  {"cluster cancel JOB [--json]", "cluster cancel BERT-train-2"},
	"cluster explain": {"cluster explain JOB [--json]", "cluster explain BERT-train-2   # why it waits, or why it went where it went"},
	"cluster list": {"cluster list [--state S] [--tenant T] [--page N] [--json]",
		"cluster list --state queued"},
	"cluster strategy": {"cluster strategy [POLICY] [--queue ORDER] [--filter F]",
		"cluster strategy spread            # switch placement live\n  cluster strategy                   # show the current one"},
	"cluster snapshot": {"cluster snapshot [--page N] [--json]", "cluster snapshot --json | jq '.summary'"},
	"cluster node": {"cluster node --name N --gpus COUNTxMODEL --nats URL [flags]",
		"cluster node --name box2 --gpus 8xA100-80GB --nats nats://10.0.0.1:4222"},
	"cluster auth init": {"cluster auth init [--dir D] [--tenants a,b] [--nodes n1,n2] [--hosts h1,h2] [--force]",
		"cluster auth init --tenants team-a,team-b --nodes box2"},
	"cluster simtest": {"cluster simtest [--seeds 1-1000] [--hours 24] [--workers N] [--verbose] [--sample 10m] [--cpuprofile FILE]",
		"cluster simtest --seeds 1-100 --hours 24     # a hundred simulated days with faults"},
	"cluster auth conf": {"cluster auth conf [--auth DIR|FILE]", "cluster auth conf --auth gpusched-auth > nats-auth.conf"},
}

// chaosHelp is the help of each cluster chaos action.
var chaosHelp = map[string]string{
	"kill":                "cluster chaos kill gpu-3",
	"hang":                "cluster chaos hang gpu-3 --duration 30s",
	"partition":           "cluster chaos partition gpu-3 --duration 30s",
	"delay":               "cluster chaos delay gpu-3 --delay 200ms --duration 1m",
	"drop":                "cluster chaos drop gpu-3 --drop 0.2 --duration 1m",
	"kill-scheduler":      "cluster chaos kill-scheduler",
	"hang-scheduler":      "cluster chaos hang-scheduler --duration 10s",
	"partition-scheduler": "cluster chaos partition-scheduler --duration 10s",
	"failover-scheduler":  "cluster chaos failover-scheduler",
}

// newFlags returns the flag set of command name whose -h prints its usage
// line, an example and its flags.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	h, ok := helps[name]
	if !ok && strings.HasPrefix(name, "cluster chaos ") {
		h = commandHelp{usage: chaosUsage[len("usage: "):], example: chaosHelp[strings.TrimPrefix(name, "cluster chaos ")]}
	}
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: %s\n\nexample:\n  %s\n\nflags:\n", h.usage, h.example)
		fs.PrintDefaults()
	}
	return fs
}
