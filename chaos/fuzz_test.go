package chaos

import (
	"testing"
	"time"

	"github.com/gpusched/gpusched/events"
)

// FuzzChaosRequest feeds every chaos action's decoder and validation: never
// a panic, a refusal names a field, an accepted hang or partition has a
// positive duration within MaxDuration and an accepted drop a fraction.
func FuzzChaosRequest(f *testing.F) {
	f.Add([]byte(`{"gpu":"gpu-5","duration":"30s"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var req events.ChaosRequest
		if fe := events.DecodeStrict(body, &req); fe != nil {
			if fe.Field == "" {
				t.Fatalf("decode error %+v names no field", fe)
			}
			return
		}
		for _, action := range append([]string{"nonsense"}, events.ChaosActions...) {
			fe := Validate(action, req)
			if fe != nil {
				if fe.Field == "" || fe.Message == "" {
					t.Fatalf("%s: error %+v names no field", action, fe)
				}
				continue
			}
			switch action {
			case events.ChaosHang, events.ChaosPartition:
				d, err := time.ParseDuration(req.Duration)
				if err != nil || d <= 0 || d > MaxDuration {
					t.Fatalf("%s accepted duration %q", action, req.Duration)
				}
			case events.ChaosDrop:
				if req.Drop == nil || *req.Drop < 0 || *req.Drop > 1 {
					t.Fatalf("drop accepted %v", req.Drop)
				}
			case "nonsense":
				t.Fatalf("an unknown action was accepted")
			}
		}
	})
}
