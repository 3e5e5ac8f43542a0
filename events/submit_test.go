package events

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gpusched/gpusched/model"
)

func TestDecodeSubmitDefaultsAndErrors(t *testing.T) {
	j, fe := DecodeSubmit([]byte(`{"name":"my-eval","priority":"medium","gpus":1,"vram":"12GiB","util":30,"duration":"20m"}`))
	if fe != nil {
		t.Fatal(fe)
	}
	if j.VRAM != 12*model.GiB || j.Priority != model.PriorityMedium || j.Duration != 20*time.Minute || !j.Preemptible || j.Tenant != DefaultTenant {
		t.Fatalf("parsed %+v", j)
	}
	j, fe = DecodeSubmit([]byte(`{"name":"x","vram":1048576,"gpu_milli":250,"duration":"1h","priority":7}`))
	if fe != nil || j.Util != 25 || j.VRAM != model.MB || j.Priority != 7 {
		t.Fatalf("gpu_milli and integer priority: %+v %v", j, fe)
	}
	// A bare number is bytes: 12 is surely not what was meant.
	if _, fe = DecodeSubmit([]byte(`{"name":"x","vram":12,"duration":"1h"}`)); fe == nil || fe.Field != "vram" || !strings.Contains(fe.Message, `e.g. "12GB"`) {
		t.Fatalf("vram 12 (bytes): %v, want a refusal saying to give a unit", fe)
	}
	if j, fe = DecodeSubmit([]byte(`{"name":"x","vram":"20GB","duration":"1h"}`)); fe != nil || model.Bytes(j.VRAM).String() != "20GB" {
		t.Fatalf("20GB reads back as %s (%v): one unit in and out", model.Bytes(j.VRAM), fe)
	}
	j, fe = DecodeSubmit([]byte(`{"name":"pod","gpu_milli":460,"cpu":6,"memory":"12GiB","duration":"1h","models":["V100M16","T4"]}`))
	if fe != nil || j.Milli != 460 || j.VRAM != 0 || j.Util != 46 || j.CPUMilli() != 6000 || len(j.Models) != 2 || j.Models[0] != "V100-16GB" {
		t.Fatalf("a trace pod (share, no VRAM, trace model names): %+v %v", j, fe)
	}
	j, fe = DecodeSubmit([]byte(`{"name":"cpu","gpus":0,"cpu":2.5,"duration":"1h"}`))
	if fe != nil || j.GPUs != 0 || j.CPUMilli() != 2500 {
		t.Fatalf("a CPU-only job: %+v %v", j, fe)
	}
	for body, field := range map[string]string{
		`{"name":"x","duration":"1h","gpu_milli":1500}`:                  "gpu_milli",
		`{"name":"x","duration":"1h","gpu_milli":0.5}`:                   "gpu_milli",
		`{"name":"x","duration":"1h","gpus":2,"gpu_milli":500}`:          "gpu_milli",
		`{"name":"x","duration":"1h","gpus":0,"gpu_milli":500}`:          "gpu_milli",
		`{"name":"x","duration":"1h","gpus":0,"vram":"1GB"}`:             "vram",
		`{"name":"x","vram":"1GB","duration":"1h","checkpoint":"often"}`: "checkpoint",
		`{"name":"x","vram":"1GB","duration":"1h","cpu":-1}`:             "cpu",
		`{"name":"x","duration":"1h"}`:                                   "vram",
		`{"name":"x","vram":"1GB","duration":"1h","gpus":-2}`:            "gpus",
		`{"name":"x","vram":"1GB","duration":"1h","gpu":"a.b"}`:          "gpu",
		`null`: "body",
	} {
		if _, fe := DecodeSubmit([]byte(body)); fe == nil || fe.Field != field {
			t.Errorf("%s: error %v, want field %s", body, fe, field)
		}
	}
}

// TestDecodeSubmitIsStrict: what encoding/json let through is refused,
// naming the field in plain words.
func TestDecodeSubmitIsStrict(t *testing.T) {
	for body, want := range map[string]string{
		`{"name":"a","name":"b","vram":"1GB","duration":"1h"}`:          "name: given twice",
		`{"name":"a","vram":"1GB","duration":"1h"}xyz`:                  "body: malformed JSON",
		`{"name":"a","vram":"1GB","duration":"1h"} {}`:                  "body: malformed JSON",
		`{"Name":"a","vram":"1GB","duration":"1h"}`:                     `Name: unknown field "Name"`,
		`{"name":"a","vram":"1GB","duration":"1h","util":"50"}`:         "util: must be a number, not a string",
		`{"name":"a","vram":"1GB","duration":"1h","gpus":1.5}`:          "gpus: must be a whole number, not 1.5",
		`{"name":"a","vram":"1GB","duration":"1h","models":[1]}`:        "models: must be a string, not a number",
		`{"name":"a","vram":"1GB","duration":"1h","priority":"urgent"}`: `priority: unknown priority "urgent"`,
		`{"name":"a","vram":"lots","duration":"1h"}`:                    "vram:",
		`[{"name":"a"}]`: "body: must be a JSON object, not a list",
		`null`:           "body: must be a JSON object, not null",
		`"job"`:          "body: must be a JSON object, not a string",
		``:               "body: empty",
	} {
		_, fe := DecodeSubmit([]byte(body))
		if fe == nil || !strings.HasPrefix(fe.Error(), want) {
			t.Errorf("%s: error %v, want one starting %q", body, fe, want)
		}
		if fe != nil && strings.Contains(fe.Message, "Go ") {
			t.Errorf("%s: %q speaks of Go types", body, fe.Message)
		}
	}
}

// TestJobSpecRoundTrips: a job's JSON (the journal's record, the copy a
// GPU actor keeps) is a submission that asks for the same job, and so is
// the older form with durations in nanoseconds still reads.
func TestJobSpecRoundTrips(t *testing.T) {
	for _, body := range []string{
		`{"name":"GPT-fine-tune","tenant":"nlp","priority":"high","vram":"38GB","util":82,"duration":"4h","checkpoint":"10m","preemptible":false}`,
		`{"name":"pod","gpu_milli":460,"cpu":6,"memory":"12GiB","duration":"1h","models":["V100M16","T4"],"priority":7}`,
		`{"name":"cpu","gpus":0,"cpu":2.5,"duration":"90s"}`,
		`{"name":"gang","gpus":4,"vram":"70GiB","util":95,"duration":"6h","node":"node-1"}`,
		`{"name":"pinned","vram":"8GB","util":20,"duration":"1h","gpu":"gpu-3","priority":"low"}`,
	} {
		want, fe := DecodeSubmit([]byte(body))
		if fe != nil {
			t.Fatalf("%s: %v", body, fe)
		}
		b, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if got, fe := DecodeSubmit(b); fe != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("the job's JSON %s does not submit the same job: %+v %v, want %+v", b, got, fe, want)
		}
		var back Job
		if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, want) {
			t.Errorf("the job's JSON %s does not read back: %+v %v", b, back, err)
		}
	}
	var old Job
	if err := json.Unmarshal([]byte(`{"name":"x","duration":1800000000000,"checkpoint":600000000000}`), &old); err != nil ||
		old.Duration != 30*time.Minute || old.Checkpoint != 10*time.Minute {
		t.Fatalf("a record with nanoseconds: %+v %v", old, err)
	}
}

// FuzzDecodeSubmit feeds the job-spec decoder (what job.submit runs)
// arbitrary bytes: it must never panic; a refusal must name a field; an
// accepted spec must satisfy what the scheduler relies on and read back
// from its own JSON. The seed corpus is in testdata/fuzz/FuzzDecodeSubmit.
func FuzzDecodeSubmit(f *testing.F) {
	f.Add([]byte(`{"name":"bert","priority":"high","vram":"20GB","util":60,"duration":"30m"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		job, fe := DecodeSubmit(body)
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
		b, err := json.Marshal(job)
		if err != nil {
			t.Fatalf("accepted %q but its JSON fails: %v", body, err)
		}
		if back, fe := DecodeSubmit(b); fe != nil || !reflect.DeepEqual(back, job) {
			t.Fatalf("accepted %q as %+v, whose JSON %s submits %+v (%v)", body, job, b, back, fe)
		}
	})
}

// TestSubmitFieldsAreBounded: every field of a submission has a bound no
// real job comes near, so that none overflows what is computed from it or
// makes a job that can never run; the error names the field.
func TestSubmitFieldsAreBounded(t *testing.T) {
	long := strings.Repeat("x", MaxNameBytes+1)
	for body, field := range map[string]string{
		`{"name":"` + long + `","vram":"1GB","duration":"1h"}`:                     "name",
		`{"name":"a\u0000b","vram":"1GB","duration":"1h"}`:                         "name",
		`{"name":"a","tenant":"team.a","vram":"1GB","duration":"1h"}`:              "tenant",
		`{"name":"a","tenant":">","vram":"1GB","duration":"1h"}`:                   "tenant",
		`{"name":"a","tenant":"*","vram":"1GB","duration":"1h"}`:                   "tenant",
		`{"name":"a","priority":9223372036854775807,"vram":"1GB","duration":"1h"}`: "priority",
		`{"name":"a","priority":-1001,"vram":"1GB","duration":"1h"}`:               "priority",
		`{"name":"a","cpu":9.3e15,"vram":"1GB","duration":"1h"}`:                   "cpu",
		`{"name":"a","memory":"2PiB","vram":"1GB","duration":"1h"}`:                "memory",
		`{"name":"a","vram":"20TiB","duration":"1h"}`:                              "vram",
		`{"name":"a","gpus":2000,"vram":"1GB","duration":"1h"}`:                    "gpus",
		`{"name":"a","vram":"1GB","duration":"900000h"}`:                           "duration",
		`{"name":"a","vram":"1GB","duration":"1h","checkpoint":"900000h"}`:         "checkpoint",
	} {
		_, fe := DecodeSubmit([]byte(body))
		if fe == nil || fe.Field != field {
			t.Errorf("%.80s: %v, want an error on %q", body, fe, field)
		}
	}
	ok := `{"name":"` + strings.Repeat("x", MaxNameBytes) + `","tenant":"team_a-1","priority":1000,"cpu":65536,"vram":"1GB","duration":"87600h"}`
	if _, fe := DecodeSubmit([]byte(ok)); fe != nil {
		t.Fatalf("a submission at every bound refused: %v", fe)
	}
}

// TestATrainingSubmission: a training job takes its name, tenant,
// priority and preemptibility from the request, whole GPUs by its replica
// count, no node CPU or memory, no duration; the fields its model decides
// are refused with it, and its own fields are checked.
func TestATrainingSubmission(t *testing.T) {
	j, fe := DecodeSubmit([]byte(`{"name":"bert-1","priority":"high","tenant":"ml","training":{"app":"bert","batch":384,"replicas":6}}`))
	if fe != nil {
		t.Fatal(fe)
	}
	if j.Training == nil || *j.Training != (model.Training{App: "bert", Batch: 384, Replicas: 6}) || j.GPUs != 6 || j.Milli != 1000 ||
		j.Duration != 0 || j.CPU != 0 || j.Memory != 0 || j.Priority != model.PriorityHigh || j.Tenant != "ml" || !j.Preemptible {
		t.Fatalf("parsed %+v", j)
	}
	back, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	var again Job
	if err := json.Unmarshal(back, &again); err != nil || again.Training == nil || *again.Training != *j.Training {
		t.Fatalf("the spec's JSON %s reads back as %+v (%v)", back, again, err)
	}
	for body, field := range map[string]string{
		`{"name":"x","duration":"1h","training":{"app":"bert","batch":384,"replicas":6}}`:   "duration",
		`{"name":"x","vram":"1GB","training":{"app":"bert","batch":384,"replicas":6}}`:      "vram",
		`{"name":"x","gpus":6,"training":{"app":"bert","batch":384,"replicas":6}}`:          "gpus",
		`{"name":"x","node":"node-1","training":{"app":"bert","batch":384,"replicas":6}}`:   "node",
		`{"name":"x","training":{"app":"","batch":384,"replicas":6}}`:                       "training.app",
		`{"name":"x","training":{"app":"a.b","batch":384,"replicas":6}}`:                    "training.app",
		`{"name":"x","training":{"app":"bert","batch":0,"replicas":6}}`:                     "training.batch",
		`{"name":"x","training":{"app":"bert","batch":384,"replicas":0}}`:                   "training.replicas",
		`{"name":"x","training":{"app":"bert","batch":384,"replicas":5000}}`:                "training.replicas",
		`{"name":"","training":{"app":"bert","batch":384,"replicas":6}}`:                    "name",
		`{"name":"x","training":{"app":"bert","batch":384,"replicas":6,"epochs":3}}`:        "training.epochs",
		`{"name":"x","priority":"urgent","training":{"app":"bert","batch":1,"replicas":1}}`: "priority",
	} {
		if _, fe := DecodeSubmit([]byte(body)); fe == nil || fe.Field != field {
			t.Errorf("%s: error %v, want field %s", body, fe, field)
		}
	}
}
