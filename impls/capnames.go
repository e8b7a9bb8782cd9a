package impls

import (
	"fmt"
	"strings"
)

// namedFlag is one capability or weakness as people and files write it.
type namedFlag struct {
	on   *bool
	name string
}

func (c *Capabilities) flags() []namedFlag {
	return []namedFlag{{&c.TTL, "ttl"}, {&c.Reentrant, "reentrant"}, {&c.Fair, "fair"}, {&c.Blocking, "blocking"},
		{&c.Fencing, "fencing"}, {&c.FaultTolerant, "fault-tolerant"}, {&c.Renewal, "renewal"}, {&c.LossSignal, "loss-signal"},
		{&c.FreedOnDisconnect, "freed-on-disconnect"}, {&c.Watchdog, "watchdog"}}
}

func (w *Weaknesses) flags() []namedFlag {
	return []namedFlag{{&w.RacyAcquire, "racy-acquire"}, {&w.ReleaseNotOwnerChecked, "release-not-owner-checked"},
		{&w.ReleaseCheckNotAtomic, "release-check-not-atomic"}, {&w.NoExpiry, "no-expiry"}, {&w.ReapsLiveHolder, "reaps-live-holder"}}
}

// CapabilityNames lists every capability as people and files write them,
// in declaration order: the words a matrix rule or a scenario may use.
func CapabilityNames() []string { return allNames((&Capabilities{}).flags()) }

// WeaknessNames lists every weakness likewise.
func WeaknessNames() []string { return allNames((&Weaknesses{}).flags()) }

func allNames(fs []namedFlag) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.name
	}
	return out
}

// Names lists the capabilities that are on, as people and scenario files
// write them ("ttl", "fault-tolerant"), in declaration order.
func (c Capabilities) Names() []string { return onNames(c.flags()) }

// Set turns on the capability people write as name.
func (c *Capabilities) Set(name string) error { return setFlag(c.flags(), "capability", name) }

// Names lists the weaknesses that are present, as scenario files and the
// matrix write them ("no-expiry").
func (w Weaknesses) Names() []string { return onNames(w.flags()) }

// Set turns on the weakness people write as name.
func (w *Weaknesses) Set(name string) error { return setFlag(w.flags(), "weakness", name) }

func onNames(fs []namedFlag) []string {
	var out []string
	for _, f := range fs {
		if *f.on {
			out = append(out, f.name)
		}
	}
	return out
}

func setFlag(fs []namedFlag, what, name string) error {
	known := make([]string, len(fs))
	for i, f := range fs {
		if f.name == name {
			*f.on = true
			return nil
		}
		known[i] = f.name
	}
	return fmt.Errorf("unknown %s %q (known: %s)", what, name, strings.Join(known, ", "))
}
