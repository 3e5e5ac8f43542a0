package observer

import (
	"testing"

	"github.com/gpusched/gpusched/events"
)

// FuzzCheckerFeed decodes arbitrary bytes as an event on a few subjects
// and feeds the checker: whatever arrives on the bus, the checker never
// panics (it may report a violation: that is its job).
func FuzzCheckerFeed(f *testing.F) {
	f.Add([]byte(`{"specversion":"1.0","id":"x","source":"/gpu/node-0/gpu-1/1","type":"gpusched.gpu.status","seq":1,"data":{"gpu":"gpu-1","node":"node-0","incarnation":1,"vram_total":100,"jobs":[{"job_id":"a","state":"running","vram":10,"offset":95}]}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c := NewChecker()
		for i := 0; i < 2; i++ {
			ev, fe := events.DecodeEvent(body)
			if fe != nil {
				c.Malformed("gpusched.evt.x", fe)
				continue
			}
			c.Feed("gpusched.evt.x", ev)
		}
		_ = c.Summary()
	})
}
