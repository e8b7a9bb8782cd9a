package runner

import (
	"fmt"
	"testing"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

// A holder whose work hangs (client-hang) while its worker process, its
// connections and its lock client's threads go on. Every client renews its
// lease from its own loop (renew), which stops with the hang: a TTL lock
// then expires and is granted again, and the holder wakes and writes (the
// outlived double grant, a lost update; without the halt of the renewal
// loop the lease would live through the hang). A watchdog inside the lock
// client (redis-watchdog) and a ZooKeeper session (zk-sequential) live on:
// nobody else is granted the lock while the hang lasts.
func TestClientHangExpiresATTLLockButNotAWatchdogOrASession(t *testing.T) {
	t.Parallel() // servers of its own; it mostly waits on them
	for _, tt := range []struct {
		approach string
		expect   []verdict.Outcome
		keptHeld bool // nobody else is granted the lock during the hang
	}{
		{"redis-setnx-px-lua", []verdict.Outcome{verdict.DoubleGrantOutlived, verdict.LostUpdate}, false},
		{"redis-watchdog", []verdict.Outcome{verdict.Safe}, true},
		{"zk-sequential", []verdict.Outcome{verdict.Safe}, true},
	} {
		t.Run(tt.approach, func(t *testing.T) {
			t.Parallel() // servers of their own; they mostly wait
			spec := workload.Spec{Clients: 3, Kind: workload.Counter, Hold: workload.Dist{Kind: "uniform", A: 40 * time.Millisecond, B: 80 * time.Millisecond},
				TTL: time.Second, Renew: true, AcquireTimeout: 5 * time.Second, Duration: 6 * time.Second, Seed: 1}
			c := faultCase(t, tt.approach, spec, step(t, "client-hang", chaos.Selector{Client: chaos.ClientHolder, Key: "0"}, time.Second, 3*time.Second, nil))
			c.Expect = verdict.Expect("test", tt.expect...)
			// The hang strikes the holder as the lab saw it; one whose
			// release was already on its way tests nothing here, and the
			// case is run again (three times at most).
			out, evs := rerun(t, c, func(out *Outcome, evs []history.Event) string {
				v := out.Verdicts[0]
				if v.Status == verdict.Undecided {
					// A server that stood still (zk-2 for 3.4 s beside the
					// containers' tests) leaves the case undecided, by design.
					return "undecided (" + v.Text + ")"
				}
				if _, ok := healedHang(evs); !ok {
					// Nobody held the key when the hang came (ZooKeeper
					// sessions lost under load: "nobody held ... within
					// 2s"): the case hung nobody and tests nothing.
					return "the hang was not injected" + whatWentWrong(evs)
				}
				// The verdict is judged of a hang that struck a holder
				// with its work to do: one that came after its write (a
				// loaded machine, the write done in the hang's 54 ms
				// start) can lose no update.
				if win, hung := hangWindow(t, evs); !heldThrough(evs, hung, win) || wroteBefore(evs, hung, win.Start) {
					return fmt.Sprintf("process %d had written or begun its release when the hang struck (%s)", hung, v.Status)
				}
				return ""
			})
			win, hung := hangWindow(t, evs)
			if v := out.Verdicts[0]; v.Status != verdict.Agrees {
				t.Fatalf("%s: %s%s", v.Status, v.Text, whatWentWrong(evs))
			}
			var others, ownRenewals, watchdogRenewals int
			for _, ev := range evs {
				if ev.T <= win.Start || ev.T >= win.End {
					continue
				}
				switch {
				case ev.F == history.Acquire && ev.Type == history.OK && ev.Proc != hung:
					others++
				case ev.F == history.Extend && ev.Type == history.OK && ev.Proc == hung:
					watchdogRenewals++
				case ev.F == history.Extend && ev.Type == history.Invoke && ev.Proc == hung:
					ownRenewals++
				}
			}
			t.Logf("during the %v hang of process %d: %d grants to others, %d renewals by it (%d renewed)",
				time.Duration(win.End-win.Start), hung, others, ownRenewals, watchdogRenewals)
			if tt.keptHeld && others > 0 {
				t.Errorf("%d grants to other clients while the holder hung: its lock was not kept", others)
			}
			if !tt.keptHeld && others == 0 {
				t.Errorf("no other client was granted the lock while the holder hung past its TTL")
			}
			if tt.approach == "redis-watchdog" && watchdogRenewals < 5 {
				t.Errorf("%d watchdog renewals recorded in the hang, want one every TTL/3", watchdogRenewals)
			}
			if tt.approach == "redis-setnx-px-lua" && ownRenewals > 0 {
				t.Errorf("the hung holder sent %d renewals of its own: its renewal loop did not stop with its work", ownRenewals)
			}
		})
	}
}

// heldThrough reports whether proc held a lock when the hang began and
// asked for no release before it ended: a hung client's steps stand
// still, so a release inside the window had begun before the hang landed
// (under load the lab's view of the holder lags its worker's).
func heldThrough(evs []history.Event, proc int, win history.Window) bool {
	if !heldAt(evs, proc, win.Start) {
		return false
	}
	for _, ev := range evs {
		if ev.Proc == proc && ev.F == history.Release && ev.Type == history.Invoke && ev.T > win.Start && ev.T < win.End {
			return false
		}
	}
	return true
}

// wroteBefore reports whether proc's last grant before t was followed by
// a write of its own, asked before t.
func wroteBefore(evs []history.Event, proc int, t int64) bool {
	return lastOfTwo(evs, proc, t, opIs(history.Write, history.Invoke), opIs(history.Acquire, history.OK))
}

// heldAt reports whether proc held a lock at t: granted, and no release
// of its invoked since.
func heldAt(evs []history.Event, proc int, t int64) bool {
	return lastOfTwo(evs, proc, t, opIs(history.Acquire, history.OK), opIs(history.Release, history.Invoke))
}

// lastOfTwo reports whether, of proc's events up to t, the last that is
// on or off is on.
func lastOfTwo(evs []history.Event, proc int, t int64, on, off func(history.Event) bool) bool {
	state := false
	for _, ev := range evs {
		if ev.T > t {
			break
		}
		if ev.Proc != proc {
			continue
		}
		switch {
		case on(ev):
			state = true
		case off(ev):
			state = false
		}
	}
	return state
}

func opIs(f string, typ history.Type) func(history.Event) bool {
	return func(ev history.Event) bool { return ev.F == f && ev.Type == typ }
}

// healedHang is the history's last client-hang window, if one was
// injected and healed.
func healedHang(evs []history.Event) (history.Window, bool) {
	var win history.Window
	for _, w := range history.FaultWindows(evs) {
		if w.Fault == "client-hang" {
			win = w
		}
	}
	return win, win.Start != 0 && win.End != 0
}

// hangWindow is the history's client-hang window and the process that held
// the key when it began (the hang moves to the next holder if the one
// picked had let go).
func hangWindow(t *testing.T, evs []history.Event) (history.Window, int) {
	t.Helper()
	win, ok := healedHang(evs)
	if !ok {
		t.Fatalf("no healed client-hang window in the history%s", whatWentWrong(evs))
	}
	// The fault names whom it hung ("client 1 (process 14)"): the holder
	// when it resolved its target, which may have begun its release
	// before the fault's start was stamped.
	var slot, holder int
	if _, err := fmt.Sscanf(win.Target, "client %d (process %d)", &slot, &holder); err != nil {
		t.Fatalf("the hang's target %q names no process: %v", win.Target, err)
	}
	return win, holder
}
