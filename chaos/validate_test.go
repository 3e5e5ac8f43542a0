package chaos

import (
	"testing"

	"github.com/gpusched/gpusched/events"
)

func TestValidateBoundsDelays(t *testing.T) {
	for delay, field := range map[string]string{"2562047h": "delay", "11s": "delay", "-1s": "delay", "10s": "", "0s": "", "300ms": ""} {
		fe := Validate(events.ChaosDelay, events.ChaosRequest{GPU: "gpu-1", Delay: delay})
		switch {
		case field == "" && fe != nil:
			t.Errorf("delay %s refused: %v", delay, fe)
		case field != "" && (fe == nil || fe.Field != field):
			t.Errorf("delay %s: %v, want an error on %q", delay, fe, field)
		}
	}
}
