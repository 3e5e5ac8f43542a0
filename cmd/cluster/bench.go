package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/term"

	"github.com/gpusched/gpusched/bench"
)

func benchCommand(args []string) error {
	fs := flag.NewFlagSet("cluster bench", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: cluster bench [--quick] [--traces DIR] [--wide]

Measures, on this machine, in one run, and prints one table: each
placement policy's decision cost at 8 to 100,000 GPUs; submit→placed
latency and placements per second through the whole path (client, NATS,
scheduler, node and GPU actors), with no journal, --memory and the
durable store, in-process and over loopback TCP; the raw bus beside them;
GPU actors' memory and start-up at 10,000 and 100,000; event fan-out to
1, 5 and 20 observers; the openb replay live and offline, and the 6×10
matrix; the Pollux workloads; a node naming 1,000 silent GPUs; and
cluster simtest over a thousand seeds (most of the full run's quarter of
an hour on 2 cores). Each target of docs/PERFORMANCE.md is checked: "met" or "MISSED".
Progress goes to stderr, the table to stdout (a block a row on a
terminal; --wide, a file or a pipe: a line a row). --quick is a reduced
run of under a minute on a quiet machine.

flags:
`)
		fs.PrintDefaults()
	}
	quick := fs.Bool("quick", false, "a reduced run (about a minute): fewer samples, no 100,000 GPU actors, no replay matrix, 20 simtest seeds")
	traces := fs.String("traces", tracesDir(), "the openb trace folder (alibaba-openb: $GPUSCHED_TRACES/alibaba-openb where that is set); the pollux/ and gavel/ folders beside it are read too; rows whose data is absent are skipped")
	quiet := fs.Bool("quiet", false, "no progress lines")
	wide := fs.Bool("wide", false, "the table a line a row, however wide (what a file or a pipe gets); on a terminal it is printed a block a row, to its width")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("bench takes no arguments (got %q)", fs.Args())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o := bench.Options{Quick: *quick, Traces: *traces, Footprint: footprintChild, SimtestWorker: startWorker}
	if !*quiet {
		o.Progress = os.Stderr
	}
	t, err := bench.Run(ctx, o)
	if t != nil && len(t.Rows) > 0 {
		if width, _, err := term.GetSize(int(os.Stdout.Fd())); err == nil && !*wide {
			t.PrintNarrow(os.Stdout, width)
		} else {
			t.Print(os.Stdout)
		}
	}
	return err
}

// footprintCommand is `cluster bench-footprint N` (not listed: cluster
// bench runs it): N GPU actors started in this process, measured, the
// figures printed as JSON.
func footprintCommand(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("bench-footprint takes the number of GPUs")
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 8 {
		return fmt.Errorf("bench-footprint %q: want a number of GPUs, at least 8", args[0])
	}
	f, err := bench.Footprint(context.Background(), n)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(f)
}

// footprintChild measures n GPU actors in a child process (this binary's
// bench-footprint), so the RSS it reports is theirs alone.
func footprintChild(ctx context.Context, n int) (bench.ActorsFootprint, error) {
	var f bench.ActorsFootprint
	self, err := os.Executable()
	if err != nil {
		return bench.Footprint(ctx, n)
	}
	out, err := exec.CommandContext(ctx, self, "bench-footprint", strconv.Itoa(n)).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return f, fmt.Errorf("%s", strings.TrimSpace(string(exit.Stderr)))
		}
		return f, err
	}
	err = json.Unmarshal(out, &f)
	return f, err
}
