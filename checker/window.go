package checker

// Window says where the lab standing still could have brought a violation
// about, and for how long it would have had to stand still: a stall of
// the lab delays what a client does, never what a server does, so it can
// make a violation only by holding a client back for as long as the
// violation went beyond what was allowed. The verdict's stall rule reads
// it; the violation itself does not depend on it.
type Window struct {
	From, To int64 // CLOCK_MONOTONIC ns: where a stall must fall
	// Need is the least time the lab must have stood still inside
	// [From, To] to have made the violation (ns); 0: any stall there may
	// have.
	Need int64 `json:"need_ns"`
}

// window of a double grant. Had its first holder let go Need sooner, the
// second grant would have found the lock free (outlived: the holder's
// tenure past the second grant), or its belief would have ended before
// the second grant (both valid: its believed lease past the second
// grant, or its tenure where it believed in none). Need runs to the
// first holder's end, not to the second's: a stall held the first back,
// and a second tenure of 40 ms inside a 3 s pause does not make 40 ms of
// stall enough. A holder that never let go, or a grant the mutex model
// calls never released, gives no bound. An outlived lease ran from the
// holder's request, not from its grant (its belief is counted from there,
// and a session's keep-alives, which cross the lab's proxies, run while it
// waits): a stall from the request on may have spent it.
func (d DoubleGrant) window() *Window {
	w := &Window{From: d.Held.Start, To: d.Second.Start}
	if d.Kind == OutlivedLease && d.Held.Asked > 0 {
		w.From = min(w.From, d.Held.Asked)
	}
	if d.Kind == NeverReleased || d.Held.End == Open {
		return w
	}
	over := d.Held.End
	if believed := d.Held.believedAt(d.Second.Start); believed != 0 && d.Kind == BothValid {
		over = believed
	}
	if over == Open || over <= d.Second.Start {
		return w
	}
	w.Need = over - d.Second.Start
	w.To = max(w.To, d.Held.End)
	if d.Kind == BothValid {
		// A belief too long was formed before its grant was recorded:
		// by a stall that ended there.
		w.From -= w.Need
	}
	return w
}
