package model

import (
	"testing"
	"unicode/utf8"
)

// FuzzParseJob feeds the job-spec decoder (what job.submit runs) arbitrary
// bytes: it must never panic; a refusal must name a field; an accepted
// spec must satisfy what the scheduler relies on. The seed corpus is in
// testdata/fuzz/FuzzParseJob.
func FuzzParseJob(f *testing.F) {
	f.Add([]byte(`{"name":"bert","priority":"high","vram":"20GB","util":60,"duration":"30m"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		job, fe := ParseJob(body)
		if fe != nil {
			if fe.Field == "" || fe.Message == "" {
				t.Fatalf("error %+v names no field or says nothing, for %q", fe, body)
			}
			if !utf8.ValidString(fe.Message) && utf8.Valid(body) {
				t.Fatalf("error message is not UTF-8: %q", fe.Message)
			}
			return
		}
		switch {
		case job.Name == "":
			t.Fatalf("accepted a job without a name: %q", body)
		case job.GPUs < 0, job.VRAM < 0, job.CPU < 0, job.Memory < 0, job.Checkpoint < 0:
			t.Fatalf("accepted negative resources %+v from %q", job, body)
		case job.Duration <= 0:
			t.Fatalf("accepted a non-positive duration %v from %q", job.Duration, body)
		case job.Util < 0 || job.Util > 100:
			t.Fatalf("accepted util %v from %q", job.Util, body)
		case job.Milli < 0 || job.Milli > 1000:
			t.Fatalf("accepted gpu_milli %v from %q", job.Milli, body)
		case job.GPUs > 0 && job.VRAM == 0 && job.Milli == 0:
			t.Fatalf("accepted a GPU job with neither vram nor gpu_milli: %q", body)
		}
	})
}
