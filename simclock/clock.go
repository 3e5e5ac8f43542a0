package simclock

import "time"

// Clock tells simulated time and arms timers in simulated durations.
type Clock interface {
	// Now is the current simulated time.
	Now() time.Time
	// NewTimer fires once after d of simulated time.
	NewTimer(d time.Duration) Timer
	// Hold marks work in progress: a virtual clock does not move on until
	// every Hold has its Release. An actor holds before a message enters
	// its mailbox and releases after handling it; the receiver of a fired
	// timer releases after handling it. Scaled clocks ignore both.
	Hold()
	// Release ends work marked by Hold or by a fired timer.
	Release()
}

// Timer is a one-shot timer on a Clock.
type Timer interface {
	// C delivers the simulated time when the timer fires.
	C() <-chan time.Time
	// Stop cancels the timer and reports whether it was still pending.
	Stop() bool
}

// Scaled runs simulated time at Speed simulated seconds per wall second,
// starting at Epoch when the clock is created.
type Scaled struct {
	Epoch     time.Time
	Speed     float64
	wallStart time.Time
}

// DefaultSpeed makes the demo's 30-minute job finish in 15 wall seconds and
// its 6-hour job in 3 minutes: 120 simulated seconds per wall second.
const DefaultSpeed = 120

// NewScaled starts a scaled clock at epoch running speed times faster than the wall.
func NewScaled(epoch time.Time, speed float64) *Scaled {
	if speed <= 0 {
		speed = DefaultSpeed
	}
	return &Scaled{Epoch: epoch, Speed: speed, wallStart: time.Now()}
}

// Now is Epoch plus the wall time since start, scaled.
func (c *Scaled) Now() time.Time {
	return c.Epoch.Add(time.Duration(float64(time.Since(c.wallStart)) * c.Speed))
}

// WallDuration converts a simulated duration to wall time.
func (c *Scaled) WallDuration(d time.Duration) time.Duration {
	return time.Duration(float64(d) / c.Speed)
}

// Hold does nothing: a scaled clock follows the wall, not the work.
func (c *Scaled) Hold() {}

// Release does nothing (see Hold).
func (c *Scaled) Release() {}

// NewTimer arms a wall timer for d/Speed.
func (c *Scaled) NewTimer(d time.Duration) Timer {
	t := &scaledTimer{c: make(chan time.Time, 1)}
	t.t = time.AfterFunc(c.WallDuration(d), func() {
		select {
		case t.c <- c.Now():
		default:
		}
	})
	return t
}

type scaledTimer struct {
	t *time.Timer
	c chan time.Time
}

func (t *scaledTimer) C() <-chan time.Time { return t.c }
func (t *scaledTimer) Stop() bool          { return t.t.Stop() }

// TimerC is t's channel: nil, which never fires in a select, for no timer.
func TimerC(t Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C()
}

// WallTimer is a Timer on the wall clock that fires after d, whatever
// clock the simulation runs on (an actor's wall-time liveness on a scaled
// clock). Its firing holds no clock.
func WallTimer(d time.Duration) Timer { return wallTimer{time.NewTimer(d)} }

type wallTimer struct{ t *time.Timer }

func (t wallTimer) C() <-chan time.Time { return t.t.C }
func (t wallTimer) Stop() bool          { return t.t.Stop() }
