package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gpusched/gpusched/actors/node"
	"github.com/gpusched/gpusched/actors/scheduler"
	"github.com/gpusched/gpusched/auth"
	"github.com/gpusched/gpusched/bus"
	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/simclock"
	"github.com/gpusched/gpusched/vram"
)

// nodeCommand runs `cluster node`: the node and GPU actors of one node,
// joining a running cluster over the bus.
func nodeCommand(args []string) error {
	fs := newFlags("cluster node")
	name := fs.String("name", "", "the node's name, unique in the cluster (required): letters, digits, - and _")
	gpus := fs.String("gpus", "8xA100-80GB", "the node's GPUs: COUNTxMODEL[,COUNTxMODEL...]; they are named NAME-gpu-0, NAME-gpu-1, ...")
	prefix := fs.String("prefix", events.DefaultPrefix, "subject prefix of the cluster")
	vramModel := fs.String("vram-model", string(vram.Contiguous), "VRAM model: contiguous or pooled (as the control plane's)")
	interference := fs.Float64("interference", model.DefaultInterference, "noisy-neighbour coefficient of co-located jobs")
	speed := fs.Float64("speed", 0, "simulated seconds per wall second (default: the control plane's, read from its snapshot)")
	lease := fs.Duration("lease", scheduler.DefaultLease, "the GPUs' lease: the control plane's --lease")
	heartbeat := fs.Duration("heartbeat", 0, "wall-time period of the node's heartbeats (default: a third of --lease, at most 2s)")
	throughputs := fs.String("throughputs", "", "the control plane's throughput table (its --throughputs): the GPUs run typed jobs at its rates")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	var busOpt bus.Options
	busOpt.AddFlags(fs, "nats://"+cluster.DefaultListen, "NATS URL of the cluster (several: comma-separated)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	spec, err := nodeSpec(*name, *gpus)
	if err != nil {
		return err
	}
	defer cluster.TuneGC(len(spec.GPUs))()
	if !model.ValidToken(*prefix) {
		return fmt.Errorf("--prefix %q: use letters, digits, - and _ only", *prefix)
	}
	vm, err := vram.ParseModel(*vramModel)
	if err != nil {
		return fmt.Errorf("--vram-model: %v", err)
	}
	var table *model.ThroughputTable
	if *throughputs != "" {
		if table, err = model.LoadThroughputs(*throughputs); err != nil {
			return fmt.Errorf("--throughputs: %w", err)
		}
	}
	if *speed < 0 || *interference < 0 {
		return fmt.Errorf("--speed and --interference must not be negative")
	}
	if *lease <= 0 {
		return fmt.Errorf("--lease must be positive, e.g. 6s")
	}
	if *heartbeat == 0 {
		*heartbeat = min(node.DefaultHeartbeat, *lease/3)
	}
	if *heartbeat < 0 || *heartbeat*2 > *lease {
		return fmt.Errorf("--heartbeat must be positive and at most half of --lease (%s)", *lease)
	}
	if err := busOpt.Check(); err != nil {
		return err
	}
	log, err := newLogger(*logLevel, zapcore.Lock(os.Stderr))
	if err != nil {
		return err
	}
	defer log.Sync()
	log = log.With(zap.String("node", spec.ID))

	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A permission the server refuses means credentials that are not this
	// node's: nothing would work, so the node stops and says so.
	ctx, refuse := context.WithCancelCause(sigCtx)
	defer refuse(nil)
	// Replies come to an inbox of this node's own: a node's credentials
	// may read there and nowhere else (auth.RolePermissions).
	nc, err := busOpt.Connect("gpusched-node-"+spec.ID, 30*time.Second, nats.CustomInboxPrefix(auth.NodeInboxPrefix(spec.ID)),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				refuse(fmt.Errorf("%v: are these node %s's credentials? (a node's credentials act as that node only: docs/SECURITY.md)", err, spec.ID))
			}
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { log.Warn("bus disconnected; reconnecting", zap.Error(err)) }),
		nats.ReconnectHandler(func(c *nats.Conn) { log.Info("bus reconnected", zap.String("server", c.ConnectedUrl())) }))
	if err != nil {
		return err
	}
	defer nc.Close()
	subjects := events.NewSubjects(*prefix)
	epoch, clusterSpeed, err := joinClock(ctx, nc, subjects, log)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return cause
		}
		return err
	}
	if *speed == 0 {
		*speed = clusterSpeed
	}
	clock := simclock.NewScaled(epoch, *speed)
	h, err := node.Start(ctx, node.HostConfig{Spec: spec, VRAMModel: vm, Clock: clock, Subjects: subjects, Conn: nc,
		Logger: log, Heartbeat: *heartbeat, Interference: *interference, Lease: *lease, Throughputs: table,
		FirstIncarnation: nodeIncarnationBase(time.Now())})
	if err != nil {
		return err
	}
	log.Info("node joined; Ctrl-C stops it", zap.String("nats", nc.ConnectedUrl()), zap.Int("gpus", len(spec.GPUs)),
		zap.Float64("speed", *speed), zap.Time("simtime", epoch))
	<-ctx.Done()
	log.Info("node stopping: the scheduler declares its GPUs dead when their leases run out")
	h.Wait()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		nc.Close()
		return cause
	}
	return nc.Drain()
}

// nodeSpec builds one node named name from a --gpus shape; its GPUs are
// named name-gpu-0, name-gpu-1, ... (GPU ids are unique in a cluster).
func nodeSpec(name, gpus string) (model.NodeSpec, error) {
	if name == "" || !model.ValidToken(name) {
		return model.NodeSpec{}, fmt.Errorf("--name %q: give the node a name of letters, digits, - and _ (e.g. rack2-node7)", name)
	}
	shape, err := model.ParseGPUs(gpus)
	if err != nil {
		return model.NodeSpec{}, err
	}
	spec := model.NodeSpec{ID: name, Labels: map[string]string{}}
	for _, n := range shape.Nodes {
		spec.CPU += n.CPU
		spec.Memory += n.Memory
		for _, g := range n.GPUs {
			g.ID = name + "-gpu-" + strconv.Itoa(len(spec.GPUs))
			spec.GPUs = append(spec.GPUs, g)
		}
	}
	if len(spec.GPUs) > 4*model.MaxGPUsPerNode {
		return model.NodeSpec{}, fmt.Errorf("--gpus %q: %d GPUs on one node; run one `cluster node` per machine", gpus, len(spec.GPUs))
	}
	return spec, nil
}

// joinClock asks the control plane for its simulated time and speed,
// waiting for it to answer: a node's GPUs run on the cluster's clock.
func joinClock(ctx context.Context, nc *nats.Conn, subjects events.Subjects, log *zap.Logger) (time.Time, float64, error) {
	waiting := false
	for {
		msg, err := nc.Request(subjects.ClusterSnapshot(), []byte(`{"page":0,"summary_only":true}`), 2*time.Second)
		if err == nil {
			var snap events.Snapshot
			if json.Unmarshal(msg.Data, &snap) == nil && !snap.SimTime.IsZero() {
				speed := snap.Speed
				if speed <= 0 {
					return time.Time{}, 0, fmt.Errorf("the cluster at %s runs a virtual clock: GPU nodes join only a scaled one", nc.ConnectedUrl())
				}
				return snap.SimTime, speed, nil
			}
		}
		if !waiting {
			log.Info("waiting for the control plane to answer its snapshot", zap.String("subject", subjects.ClusterSnapshot()))
			waiting = true
		}
		select {
		case <-ctx.Done():
			return time.Time{}, 0, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// incarnationEpoch is the start of the milliseconds nodeIncarnationBase
// counts.
var incarnationEpoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// nodeIncarnationBase is the first incarnation of a node process started
// at now: the milliseconds since 2020, so that a node restarted under the
// same name starts above every incarnation its previous process reached
// (each re-fence adds one; a thousand a second would be needed to catch
// up) and the scheduler takes it at once, where counting from 1 again it
// was stale until its counter passed the old one (issue 42: minutes).
func nodeIncarnationBase(now time.Time) int {
	return max(1, int(now.Sub(incarnationEpoch).Milliseconds()))
}
