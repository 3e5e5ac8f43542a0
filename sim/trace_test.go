package sim

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/openb"
)

func TestJobLinesParseAndNameTheirErrors(t *testing.T) {
	good := `# my trace
{"name":"a","vram":"8GB","duration":"30m","submit_at":0}

{"name":"c","vram":"8GB","duration":"1h","priority":"high","submit_at":"2h"}
{"name":"b","vram":"8GB","duration":"10m","submit_at":3600.5}
`
	arr, err := ParseJobLines(strings.NewReader(good), "t.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range arr {
		names = append(names, a.Name)
		if strings.Contains(string(a.Body), "submit_at") {
			t.Fatalf("submit_at left in the job spec: %s", a.Body)
		}
	}
	if strings.Join(names, ",") != "a,b,c" || arr[1].At != 3600500*time.Millisecond || arr[2].At != 2*time.Hour {
		t.Fatalf("arrivals %v at %v, %v", names, arr[1].At, arr[2].At)
	}
	bad := map[string]string{
		`{"name":"a","vram":"8GB","duration":"30m"}`:                          "t.jsonl:1: submit_at: required",
		`{"name":"a","vram":"8GB","duration":"30m","submit_at":"soon"}`:       "t.jsonl:1: submit_at: \"soon\" is not a duration",
		`{"name":"a","vram":"8GB","duration":"30m","submit_at":-5}`:           "t.jsonl:1: submit_at: must not be negative",
		`{"name":"a","vram":"8GB","duration":"30m","submit_at":1,"colour":1}`: "t.jsonl:1: colour: unknown field",
		`{"name":"a","vram":"-8GB","duration":"30m","submit_at":1}`:           "t.jsonl:1: vram:",
		`not json`: "t.jsonl:1: body: malformed JSON",
		`{"name":"a","name":"b","vram":"8GB","duration":"30m","submit_at":1}`: "t.jsonl:1: name: given twice",
	}
	for line, want := range bad {
		_, err := ParseJobLines(strings.NewReader(line), "t.jsonl")
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", line, err, want)
		}
	}
}

func TestPodArrivalsMapTimesAndQoS(t *testing.T) {
	pods := []openb.Pod{
		{Name: "late", CPUMilli: 2000, MemoryMiB: 1024, GPUs: 1, Milli: 500, QoS: "BE", Creation: 100, Scheduled: 160, Deletion: 3760, HasTimes: true},
		{Name: "early", CPUMilli: 4000, MemoryMiB: 2048, GPUs: 8, Milli: 1000, QoS: "LS", Creation: 10, Scheduled: 10, Deletion: 7210, HasTimes: true},
		{Name: "never-ran", CPUMilli: 1000, MemoryMiB: 512, GPUs: 1, Milli: 1000, QoS: "Burstable", Creation: 50, Deletion: 110, HasTimes: true},
	}
	arr, err := PodArrivals(pods)
	if err != nil {
		t.Fatal(err)
	}
	type spec struct {
		Name, Duration, Priority string
		Preemptible              bool
		GPUs                     int
		Milli                    int `json:"gpu_milli"`
	}
	want := []spec{{"early", "2h0m0s", "high", false, 8, 1000}, {"never-ran", "1m0s", "medium", true, 1, 1000}, {"late", "1h0m0s", "low", true, 1, 500}}
	for i, a := range arr {
		var got spec
		json.Unmarshal(a.Body, &got)
		if got != want[i] {
			t.Errorf("arrival %d: %+v, want %+v", i, got, want[i])
		}
	}
	if arr[0].At != 10*time.Second || arr[2].At != 100*time.Second {
		t.Fatalf("arrival times %v, %v", arr[0].At, arr[2].At)
	}
	if _, err := PodArrivals([]openb.Pod{{Name: "p", QoS: "LS"}}); err == nil || !strings.Contains(err.Error(), "no creation and deletion times") {
		t.Fatalf("a pod without times: %v", err)
	}
	if _, err := PodArrivals([]openb.Pod{{Name: "p", QoS: "VIP", HasTimes: true}}); err == nil || !strings.Contains(err.Error(), "qos") {
		t.Fatalf("an unknown qos: %v", err)
	}
}

func TestPercentileIsNearestRank(t *testing.T) {
	xs := []float64{15, 20, 35, 40, 50}
	for p, want := range map[float64]float64{5: 15, 30: 20, 40: 20, 50: 35, 100: 50, 99: 50} {
		if got := Percentile(xs, p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
}
