package events

import "testing"

// TestSubjectsParseWhatTheyBuild: every parser reads back what its
// builder wrote, under a prefix with dots too, and refuses other subjects.
func TestSubjectsParseWhatTheyBuild(t *testing.T) {
	for _, prefix := range []string{"gpusched", "lab.gpusched"} {
		s := NewSubjects(prefix)
		if node, gpu, ok := ParseGPUCtl(s.GPUCtl("node-1", "gpu-7")); !ok || node != "node-1" || gpu != "gpu-7" {
			t.Errorf("%s: GPUCtl read back as %q %q %v", prefix, node, gpu, ok)
		}
		if node, what, ok := ParseNodeSubject(s.NodeCtl("box2")); !ok || node != "box2" || what != "ctl" {
			t.Errorf("%s: NodeCtl read back as %q %q %v", prefix, node, what, ok)
		}
		if node, what, ok := ParseNodeSubject(s.NodeLease("box2")); !ok || node != "box2" || what != "lease" {
			t.Errorf("%s: NodeLease read back as %q %q %v", prefix, node, what, ok)
		}
		if node, gpu, typ, ok := ParseGPUEvent(s.GPUEvent("node-0", "gpu-3", GPUDown)); !ok || node != "node-0" || gpu != "gpu-3" || typ != GPUDown {
			t.Errorf("%s: GPUEvent read back as %q %q %q %v", prefix, node, gpu, typ, ok)
		}
		if typ, ok := s.ParseJobEvent(s.JobEvent(JobPlaced)); !ok || typ != JobPlaced {
			t.Errorf("%s: JobEvent read back as %q %v", prefix, typ, ok)
		}
		for _, other := range []string{s.SchedEvent(SchedDecision), s.GPUEvent("n", "g", GPUDown), s.JobEvent(""), s.JobEvent("a.b")} {
			if typ, ok := s.ParseJobEvent(other); ok {
				t.Errorf("%s: %s read as job event %q", prefix, other, typ)
			}
		}
		if node, what, ok := ParseNodeSubject(s.NodeBatch("box2")); !ok || node != "box2" || what != "batch" {
			t.Errorf("%s: NodeBatch read back as %q %q %v", prefix, node, what, ok)
		}
		if node := HeartbeatNode(s.NodeHeartbeat("box2")); node != "box2" {
			t.Errorf("%s: NodeHeartbeat read back as %q", prefix, node)
		}
		if node := s.EventNode(s.NodeHeartbeat("box2")); node != "box2" {
			t.Errorf("%s: EventNode of a heartbeat: %q", prefix, node)
		}
		if node := s.EventNode(s.GPUEvent("box2", "box2-gpu-0", GPUDown)); node != "box2" {
			t.Errorf("%s: EventNode of a GPU event: %q", prefix, node)
		}
		for _, other := range []string{s.JobEvent("placed"), s.SchedEvent("policy"), s.Prefix + ".evt.gpu.box2", "other.evt.gpu.box2.g.x"} {
			if node := s.EventNode(other); node != "" {
				t.Errorf("%s: EventNode(%q) = %q, want none", prefix, other, node)
			}
		}
		for _, ev := range []string{s.JobEvent("placed"), s.GPUEvent("n", "g", GPUStatusType), s.NodeHeartbeat("n"), s.Metrics(), s.SchedEvent(SchedDown)} {
			if !s.IsEvent(ev) {
				t.Errorf("%s: IsEvent(%q) false", prefix, ev)
			}
		}
		for _, other := range []string{s.JobSubmit(), s.NodeCtl("n"), s.GPUCtl("n", "g"), s.SchedExplain(), "other.evt.metrics", s.Prefix + "x.evt.metrics"} {
			if s.IsEvent(other) {
				t.Errorf("%s: IsEvent(%q) true", prefix, other)
			}
		}
		if a := ChaosAction(s.Chaos(ChaosKillScheduler)); a != ChaosKillScheduler {
			t.Errorf("%s: Chaos read back as %q", prefix, a)
		}
		for _, v := range Services {
			if got, ok := s.ParseService(s.Service(v)); !ok || got != v {
				t.Errorf("%s: Service(%q) read back as %q %v", prefix, v, got, ok)
			}
		}
		tenant := map[string]bool{}
		for _, sub := range s.TenantServices() {
			v, ok := s.ParseService(sub)
			tenant[sub] = true
			if !ok || !v.ForTenants() {
				t.Errorf("%s: tenant service %q read back as %q %v", prefix, sub, v, ok)
			}
		}
		if len(tenant) != 6 || tenant[s.SchedStrategy()] || tenant[s.SchedCtl()] {
			t.Errorf("%s: tenant services %v, want six, without strategy and ctl", prefix, s.TenantServices())
		}
		for _, other := range []string{s.JobEvent("placed"), s.Prefix + ".job.teleport", "other.job.submit", s.Prefix + ".job.submit.x"} {
			if v, ok := s.ParseService(other); ok {
				t.Errorf("%s: ParseService(%q) = %q, want none", prefix, other, v)
			}
		}
		if !s.IsGPUEvent(s.GPUEvent("n", "g", GPUStatusType)) || s.IsGPUEvent(s.NodeHeartbeat("n")) ||
			!s.IsNodeEvent(s.NodeHeartbeat("n")) || !s.IsNodeEvent(s.NodeEvent("n", NodeDown)) || s.IsNodeEvent(s.JobEvent("placed")) {
			t.Errorf("%s: IsGPUEvent or IsNodeEvent reads a subject wrong", prefix)
		}
		if !s.IsChaos(s.Chaos(ChaosKillAction)) || s.IsChaos(s.JobSubmit()) {
			t.Errorf("%s: IsChaos reads a subject wrong", prefix)
		}
		if _, _, ok := ParseGPUCtl(s.NodeCtl("node-1")); ok {
			t.Errorf("%s: a node's ctl read as a GPU's", prefix)
		}
		if _, _, _, ok := ParseGPUEvent(s.NodeHeartbeat("node-1")); ok {
			t.Errorf("%s: a heartbeat read as a GPU event", prefix)
		}
	}
	for _, bad := range []string{"", ".", "gpu.a.b.ctl", "x.gpu..b.ctl", "x.gpu.a.b.ctl.", "evt.gpu.a.b"} {
		if _, _, ok := ParseGPUCtl(bad); ok {
			t.Errorf("%q read as a GPU ctl subject", bad)
		}
		if _, _, _, ok := ParseGPUEvent(bad); ok {
			t.Errorf("%q read as a GPU event subject", bad)
		}
	}
}

// TestAnswerableReplySubjects: the cluster's services answer inboxes and
// the server's import replies, and nothing under their own prefix or the
// server's subjects.
func TestAnswerableReplySubjects(t *testing.T) {
	s := NewSubjects("gpusched")
	for reply, want := range map[string]bool{
		"_INBOX.abc.1":                      true,
		"_INBOX_NODE.box2.x":                true,
		"_R_.aBc.dEf":                       true,
		"my.inbox.1":                        true,
		"gpusched.evt.gpu.box2.x":           false,
		"gpusched.evt.zz":                   false,
		"gpusched.chaos.kill":               false,
		"$JS.API.STREAM.DELETE.GPUSCHED_EV": false,
		"$KV.GPUSCHED_JOBS.x":               false,
		"gpuschedx.evt":                     true,
	} {
		if got := s.Answerable(reply); got != want {
			t.Errorf("Answerable(%q) = %v, want %v", reply, got, want)
		}
	}
}

// TestEventTypesParseWhatTypeBuilds: ParseType reads back what Type
// wrote; JobEventType names a job event's state and nothing else.
func TestEventTypesParseWhatTypeBuilds(t *testing.T) {
	if f, typ, ok := ParseType(Type("sched", SchedUp)); !ok || f != "sched" || typ != SchedUp {
		t.Errorf("Type(sched, up) read back as %q %q %v", f, typ, ok)
	}
	if st, ok := JobEventType(Type("job", JobPlaced)); !ok || st != JobPlaced {
		t.Errorf("a placed job's type read back as %q %v", st, ok)
	}
	for _, other := range []string{Type("gpu", GPUDown), "gpusched.job", "gpusched.job.", "other.job.placed", ""} {
		if st, ok := JobEventType(other); ok {
			t.Errorf("JobEventType(%q) = %q, want none", other, st)
		}
	}
}
