package chaos

import (
	"context"
	"fmt"
	"time"
)

// ClientClock moves one client's lease clock: the clock its approach uses
// for lease arithmetic (ValidUntil, Redlock's validity and drift), never the
// machine's. To a lock holder this is a clock jump: a clock ahead makes it
// give up a valid lock early (safe); a clock behind, or one running slow,
// makes it believe in a lease the server has already expired.
//
// Options, exactly one of:
//   - offset: jump the clock by this much at once ("-2s" moves it back);
//   - rate: let it drift by rate seconds per real second until the heal
//     (0.5 gains 500 ms per second, -0.5 loses it), updated every 10 ms.
//
// The heal takes back exactly what this injection added, so overlapping
// clock faults on one client compose. Targets: a client with a Clock
// (goroutine clients too).
type ClientClock struct {
	Offset Duration `yaml:"offset"`
	Rate   float64  `yaml:"rate"`
}

// driftTick is how often a drifting clock is moved: fine enough that lease
// arithmetic sees a smooth drift, coarse enough to cost nothing.
const driftTick = 10 * time.Millisecond

func (ClientClock) Kind() string   { return "client-clock" }
func (ClientClock) Needs() Needs   { return Needs{ClientClock: true} }
func (ClientClock) Threat() string { return ThreatClockJump }

// Ranges: a drift now and then (one in five), else a jump of half a
// lease to three, back more often than ahead (a clock behind is what makes
// a holder believe in an expired lease).
func (ClientClock) Ranges() Ranges {
	return Ranges{Options: []Choice{{Ways: []Way{
		{Weight: 1, Option: "rate", Values: []string{"-0.5", "0.5", "-0.8"}},
		{Weight: 4, Option: "offset", Span: Span{0.5, 3}, Back: &Back{In: 3, Of: 5}},
	}}}, For: Span{0.5, 3}}
}

func (f ClientClock) Validate() error {
	if (f.Offset == 0) == (f.Rate == 0) {
		return fmt.Errorf("client-clock: give exactly one of offset (a jump) and rate (a drift)")
	}
	if f.Rate <= -1 {
		return fmt.Errorf("client-clock: rate %v would run the clock backwards; want more than -1", f.Rate)
	}
	return nil
}

func (f ClientClock) Available(t Target) error {
	if t.Clock == nil {
		return unavailable(f, t, "no lease clock")
	}
	return nil
}

func (f ClientClock) Inject(ctx context.Context, t Target) (Heal, error) {
	// This injection's own delta, each move one step on the clock: a heal
	// subtracts what it added, whatever other injections did meanwhile.
	shift := t.Clock.Shift
	if f.Rate == 0 {
		shift(f.Offset.D())
		return once(func(context.Context) error { shift(-f.Offset.D()); return nil }), nil
	}
	var (
		applied time.Duration // owned by the drift goroutine until done
		stop    = make(chan struct{})
		done    = make(chan struct{})
	)
	start := time.Now()
	go func() {
		defer close(done)
		tick := time.NewTicker(driftTick)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				want := time.Duration(f.Rate * float64(time.Since(start)))
				shift(want - applied)
				applied = want
			}
		}
	}()
	return once(func(context.Context) error {
		close(stop)
		<-done
		shift(-applied)
		return nil
	}), nil
}
