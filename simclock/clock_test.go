package simclock

import (
	"testing"
	"time"
)

func TestScaledClockRunsFasterThanTheWall(t *testing.T) {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewScaled(epoch, 3600) // one simulated hour per wall second
	wallStart := time.Now()
	timer := c.NewTimer(30 * time.Minute)
	fired := <-timer.C()
	wall := time.Since(wallStart)
	if fired.Sub(epoch) < 30*time.Minute {
		t.Fatalf("timer fired at simulated %s, before the 30m it was set for", fired.Sub(epoch))
	}
	// 30 simulated minutes at 3600× are half a wall second; a loaded machine
	// may be late, never early.
	if wall < 500*time.Millisecond {
		t.Fatalf("30 simulated minutes took only %s of wall time", wall)
	}
	if c.WallDuration(time.Hour) != time.Second {
		t.Fatalf("an hour is %s of wall time at 3600×", c.WallDuration(time.Hour))
	}
}

func TestStoppedTimerDoesNotFire(t *testing.T) {
	c := NewScaled(time.Unix(0, 0), 1)
	timer := c.NewTimer(time.Hour)
	if !timer.Stop() {
		t.Fatal("Stop on a pending timer reported it was not pending")
	}
	select {
	case <-timer.C():
		t.Fatal("a stopped timer fired")
	default:
	}
}
