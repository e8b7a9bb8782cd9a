package chaos

import (
	"context"
	"fmt"
	"time"
)

// ThreatServerClockJump: a server's wall clock jumps; a server that times
// leases on it (Redis key expiry) ends them early or late.
const ThreatServerClockJump = "server-clock-jump"

// ServerClock jumps a server's wall clock by offset (libfaketime; the servers
// must have been started under it, which a plan containing this fault asks
// for). The server keeps running and keeps its data; only its clock moves,
// as an NTP step or an operator's `date -s` would move it. To a lock holder
// this is a server clock jump: Redis stores a key's expiry as an absolute
// wall-clock time, so a jump forward past a lock's TTL expires the lock at
// once while its holder, timing its lease on its own clock, still believes
// in it (Kleppmann's node C). ZooKeeper measures sessions on the monotonic
// clock, which the jump leaves alone, so its locks do not notice. etcd is a
// Go program that libfaketime cannot reach: the fault refuses its nodes.
//
// The heal moves the clock back by exactly what this injection added.
//
// Options: offset (required; "40s" forward, "-40s" back). Targets: a node
// locklab runs under libfaketime, or one of the user's with a clock fault
// command.
type ServerClock struct {
	Offset Duration `yaml:"offset"`
}

// ServerClockSetter is what the fault needs of a node (cluster.Node has it).
type ServerClockSetter interface {
	CanSetClock() error
	// ShiftClock moves the clock by d from where it stands, as one step.
	ShiftClock(d time.Duration) error
}

func (ServerClock) Needs() Needs   { return Needs{ServerClock: true} }
func (ServerClock) Kind() string   { return "server-clock" }
func (ServerClock) Threat() string { return ThreatServerClockJump }

// Ranges: a jump ahead of one to five leases (a key expires early), or in
// three of ten one back of one to three.
func (ServerClock) Ranges() Ranges {
	return Ranges{Options: []Choice{{Ways: []Way{{Weight: 1, Option: "offset", Span: Span{1, 5}, Back: &Back{In: 3, Of: 10, Span: Span{1, 3}}}}}},
		For: Span{0.5, 3}}
}

func (f ServerClock) Validate() error {
	if f.Offset == 0 {
		return fmt.Errorf("server-clock: give offset, the jump (\"40s\" forward, \"-40s\" back)")
	}
	return nil
}

func (f ServerClock) Available(t Target) error {
	if err := needNodeProcess(f, t); err != nil {
		return err
	}
	s, ok := t.Process.(ServerClockSetter)
	if !ok {
		return unavailable(f, t, "its clock cannot be set")
	}
	if err := s.CanSetClock(); err != nil {
		return unavailable(f, t, err.Error())
	}
	return nil
}

func (f ServerClock) Inject(ctx context.Context, t Target) (Heal, error) {
	s, ok := t.Process.(ServerClockSetter)
	if !ok {
		return nil, unavailable(f, t, "its clock cannot be set")
	}
	if err := s.CanSetClock(); err != nil {
		return nil, unavailable(f, t, err.Error())
	}
	// This injection's own delta, so overlapping jumps on one node compose
	// and each heal takes back only its own.
	if err := s.ShiftClock(f.Offset.D()); err != nil {
		return nil, fmt.Errorf("%s %s: %w", f.Kind(), t.Name, err)
	}
	return once(func(context.Context) error {
		if err := s.ShiftClock(-f.Offset.D()); err != nil {
			return fmt.Errorf("heal %s %s: %w", f.Kind(), t.Name, err)
		}
		return nil
	}), nil
}
