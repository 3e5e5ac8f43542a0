package core

import (
	"strconv"
	"time"

	"github.com/gpusched/gpusched/model"
)

// bucket is a token bucket: tokens left, as of when.
type bucket struct {
	tokens float64
	at     time.Time
}

// tenantRates are the tenants' submission allowances: rate a second in
// bursts of burst (Config.TenantRate, TenantBurst; no bound at rate 0),
// in wall time, a token bucket per tenant.
type tenantRates struct {
	rate    float64
	burst   int
	buckets map[string]*bucket
}

func newTenantRates(rate float64, burst int) *tenantRates {
	return &tenantRates{rate: rate, burst: burst, buckets: map[string]*bucket{}}
}

// take spends one of tenant's submissions at wall, or says how long to
// wait. A repeat of a submission (its key) spends nothing: it is answered
// before it is asked.
func (t *tenantRates) take(tenant string, wall time.Time) *model.FieldError {
	rate := t.rate
	if tenant == "" || rate <= 0 {
		return nil
	}
	burst := float64(t.burst)
	if burst < 1 {
		burst = max(1, rate)
	}
	b := t.buckets[tenant]
	if b == nil {
		b = &bucket{tokens: burst, at: wall}
		t.buckets[tenant] = b
	}
	b.tokens = min(burst, b.tokens+rate*max(0, wall.Sub(b.at).Seconds()))
	b.at = wall
	if b.tokens < 1 {
		wait := time.Duration((1 - b.tokens) / rate * float64(time.Second))
		return model.Errorf("tenant", "%s submits faster than the %s a second it may (bursts of %d): not accepted, try again in %s",
			tenant, strconv.FormatFloat(rate, 'f', -1, 64), int(burst), wait.Round(time.Millisecond))
	}
	b.tokens--
	return nil
}
