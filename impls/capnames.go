package impls

// Names lists the capabilities that are on, as people and scenario files
// write them ("ttl", "fault-tolerant"), in declaration order.
func (c Capabilities) Names() []string {
	var out []string
	for _, f := range []struct {
		on   bool
		name string
	}{{c.TTL, "ttl"}, {c.Reentrant, "reentrant"}, {c.Fair, "fair"}, {c.Blocking, "blocking"},
		{c.Fencing, "fencing"}, {c.FaultTolerant, "fault-tolerant"}, {c.Renewal, "renewal"}, {c.LossSignal, "loss-signal"},
		{c.FreedOnDisconnect, "freed-on-disconnect"}} {
		if f.on {
			out = append(out, f.name)
		}
	}
	return out
}

// Names lists the weaknesses that are present, as scenario files and the
// matrix write them ("no-expiry").
func (w Weaknesses) Names() []string {
	var out []string
	for _, f := range []struct {
		on   bool
		name string
	}{{w.RacyAcquire, "racy-acquire"}, {w.ReleaseNotOwnerChecked, "release-not-owner-checked"},
		{w.ReleaseCheckNotAtomic, "release-check-not-atomic"}, {w.NoExpiry, "no-expiry"}, {w.ReapsLiveHolder, "reaps-live-holder"}} {
		if f.on {
			out = append(out, f.name)
		}
	}
	return out
}
