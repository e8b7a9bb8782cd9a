package verdict

import (
	"slices"

	"github.com/locklab/locklab/checker"
)

// Outcome is one thing a case can show, in lock terms. What each means,
// and every other fact about it, is its row of the outcome table (Rows).
type Outcome string

// The outcomes, as scenario files and results name them.
const (
	Safe                 Outcome = "safe"
	DoubleGrantBothValid Outcome = "double-grant:both-valid"
	DoubleGrantOutlived  Outcome = "double-grant:outlived"
	DoubleGrant          Outcome = "double-grant"
	Revoked              Outcome = "revoked"
	PhantomRelease       Outcome = "phantom-release"
	NeverGranted         Outcome = "never-granted"
	NonLinearizable      Outcome = "non-linearizable"
	LostUpdate           Outcome = "lost-update"
	StaleWriteRefused    Outcome = "stale-write-refused"
	StaleWrite           Outcome = "stale-write"
	TaskTwice            Outcome = "task-twice"
	TokenRegressed       Outcome = "token-regressed"
	RenewedAfterRelease  Outcome = "renewed-after-release"
	Blocked              Outcome = "blocked"
	Unavailable          Outcome = "unavailable"
	Unrecovered          Outcome = "unrecovered"
)

// Row is every fact about one outcome. The outcome table is the only
// place they are written: Parse, Observe, Compare, the matrix's judgement
// (matrix.Expectations.Judge), its compact table's legend (report), and
// explore's found files read it; TestEveryClassIsWhole holds it to the
// checker's classes and docs/scenarios.md's table of outcomes.
type Row struct {
	Outcome Outcome
	// Classes are the checker's classes of violation counted as it.
	Classes []checker.Class
	// Unsafe: it breaks mutual exclusion or the resource.
	Unsafe bool
	// Family is the wider outcome it is a kind of ("" for none): an
	// expectation naming double-grant is met by either kind of double grant.
	Family Outcome
	// Consequence: it follows from a double grant, so a case that shows
	// it beside one shows one thing, not several.
	Consequence bool
	// FencedAway: a fenced store prevents it (a consequence only).
	FencedAway bool
	// Liveness: the lock service stopped serving, which no violation says
	// and a case's end must be waited for to tell.
	Liveness bool
	// Abbrev and Legend are how it reads in the matrix's compact table
	// and in that table's legend.
	Abbrev, Legend string
	// Meaning is what it is, as docs/scenarios.md's table of outcomes
	// says it.
	Meaning string
	// Found is what a case showed, in a found file's words (explore):
	// every unsafe outcome has them, and blocked (explore finds it too).
	Found string
}

// table is the outcome table, in the order the matrix's legend lists
// the outcomes and Parse names them.
var table = []Row{
	{Outcome: Safe, Abbrev: "safe", Legend: "no violation", Meaning: "no violation of any kind, verdict decided"},
	{Outcome: DoubleGrantBothValid, Classes: []checker.Class{checker.DoubleGrantBothValid,
		// No lease on either side: the service broke mutual exclusion all
		// the same.
		checker.DoubleGrantHeldAtOnce},
		Unsafe: true, Family: DoubleGrant, Abbrev: "DGv", Legend: "double grant, both leases valid",
		Meaning: "the service granted while the first lease was still valid",
		Found:   "two clients held the lock at once while both their leases were valid: the lock service granted it twice"},
	{Outcome: DoubleGrantOutlived, Classes: []checker.Class{checker.DoubleGrantOutlived},
		Unsafe: true, Family: DoubleGrant, Abbrev: "DGo", Legend: "double grant, the holder outlived its lease",
		Meaning: "the first holder went on past its own lease",
		Found:   "two clients held the lock at once: one of them went on past its own lease"},
	// The mutex model's double grant: no lease to have outlived, nor one
	// valid.
	{Outcome: DoubleGrant, Classes: []checker.Class{checker.DoubleGrantNeverReleased},
		Unsafe: true, Abbrev: "DG", Legend: "double grant",
		Meaning: "two holders at once: either kind above, or the mutex model's (the first holder never released)",
		Found:   "two clients held the lock at once: the first one's release had failed or it had crashed, and nothing expires"},
	{Outcome: Revoked, Classes: []checker.Class{checker.Revoked},
		Unsafe: true, Consequence: true, Abbrev: "rev", Legend: "revoked: the holder was told its lock was gone",
		Meaning: "the lock was taken away and the holder found out",
		Found:   "the lock was taken from a holder that was still working, and the holder was told"},
	{Outcome: PhantomRelease, Classes: []checker.Class{checker.PhantomRelease},
		Unsafe: true, Abbrev: "PR", Legend: "release of another holder's lock",
		Meaning: "a release succeeded for a client that did not hold the lock",
		Found:   "a release succeeded for a client that did not hold the lock"},
	{Outcome: NeverGranted, Unsafe: true, Abbrev: "NG", Legend: "a grant no order of events allows",
		Meaning: "a grant that no order of events allows",
		Found:   "a client held the lock in a way no order of the operations allows"},
	{Outcome: NonLinearizable, Unsafe: true, Consequence: true, Abbrev: "NL", Legend: "not linearizable",
		Meaning: "not linearizable, and no finer class applies",
		Found:   "the history of the lock is not linearizable"},
	{Outcome: LostUpdate, Classes: []checker.Class{checker.LostUpdate},
		Unsafe: true, Consequence: true, FencedAway: true, Abbrev: "LU", Legend: "lost update",
		Meaning: "a write built on a stale read was accepted",
		Found:   "an update of the protected counter was lost: a holder wrote back a value read before another holder's write"},
	{Outcome: StaleWriteRefused, Abbrev: "SWR", Legend: "stale write refused by the fenced store",
		Meaning: "a fenced store refused a stale holder's write"},
	{Outcome: StaleWrite, Classes: []checker.Class{checker.StaleWrite},
		Unsafe: true, Consequence: true, FencedAway: true, Abbrev: "SW", Legend: "stale write accepted",
		Meaning: "a stale holder's write was accepted",
		Found:   "the store accepted a write from a holder whose lock had passed to another"},
	{Outcome: TaskTwice, Classes: []checker.Class{checker.DuplicateTask},
		Unsafe: true, Consequence: true, FencedAway: true, Abbrev: "TT", Legend: "task processed twice",
		Meaning: "a task was processed twice",
		Found:   "a task was processed twice"},
	{Outcome: TokenRegressed, Classes: []checker.Class{checker.TokenRegressed},
		Unsafe: true, Abbrev: "TR", Legend: "fencing tokens out of order",
		Meaning: "fencing tokens went backwards against the grant order",
		Found:   "fencing tokens went backwards: a later grant carried a smaller token"},
	{Outcome: RenewedAfterRelease, Classes: []checker.Class{checker.RenewedAfterRelease},
		Unsafe: true, Abbrev: "RAR", Legend: "a lease renewed after its release",
		Meaning: "a lease was renewed after its holder had released it (a watchdog outliving the release)",
		Found:   "a lease was renewed after its holder had released it: the key stays alive with no holder"},
	{Outcome: Blocked, Liveness: true, Abbrev: "blk", Legend: "blocked until a human intervenes",
		Meaning: "clients kept asking but nobody was granted the lock in the stretch after the last fault: an acquire ended there ungranted (refused, or answered indeterminate when its deadline struck mid-call) and none succeeded; or a key stayed stuck well past when it should have come free (after every fault, its last holder's release or its TTL or session, half a time scale more), while clients asked for it",
		Found:   "the lock stayed taken to the end of the run, well after it should have come free, while clients asked for it: nobody was granted it again"},
	{Outcome: Unavailable, Liveness: true, Abbrev: "unav", Legend: "unavailable",
		Meaning: "the lock service refused to answer"},
	{Outcome: Unrecovered, Liveness: true, Abbrev: "unrec", Legend: "servers did not recover",
		Meaning: "the servers failed the lab's health check after every fault was healed: a finding about the servers' recovery, not the lock's safety (the history up to then is still checked)",
		Found:   "the servers did not recover after the faults were healed: they failed the lab's health check, and the next runs had servers started anew"},
}

// Rows is the outcome table, in its order.
func Rows() []Row { return slices.Clone(table) }

// Row is o's row of the outcome table; ok false for a name it lacks.
func (o Outcome) Row() (Row, bool) {
	i := slices.IndexFunc(table, func(r Row) bool { return r.Outcome == o })
	if i < 0 {
		return Row{}, false
	}
	return table[i], true
}

// row is o's row, or the zero row.
func (o Outcome) row() Row {
	r, _ := o.Row()
	return r
}

// Unsafe reports whether o breaks mutual exclusion or the resource.
func (o Outcome) Unsafe() bool { return o.row().Unsafe }

// IsDoubleGrant reports whether o is a double grant, of any kind.
func (o Outcome) IsDoubleGrant() bool { return o == DoubleGrant || o.row().Family == DoubleGrant }

// FollowsFromDoubleGrant reports whether o is a consequence of a double
// grant: a case that shows it beside one shows one thing, not several.
func (o Outcome) FollowsFromDoubleGrant() bool { return o.row().Consequence }

// FollowsFrom reports whether o is a consequence of a double grant among
// others: beside it, part of one thing (a finding, a prediction).
func (o Outcome) FollowsFrom(others []Outcome) bool {
	return o.FollowsFromDoubleGrant() && slices.ContainsFunc(others, Outcome.IsDoubleGrant)
}

// FencedAway reports whether a fenced store prevents o.
func (o Outcome) FencedAway() bool { return o.row().FencedAway }

// Liveness reports whether o says the service stopped serving.
func (o Outcome) Liveness() bool { return o.row().Liveness }

// Satisfies reports whether an observed outcome o meets an expected one:
// the same, or a kind of it (either double grant meets double-grant).
func (o Outcome) Satisfies(expected Outcome) bool {
	return o == expected || o.row().Family == expected && expected != ""
}

// UnsafeOutcomes lists every unsafe outcome, in the table's order.
func UnsafeOutcomes() []Outcome {
	var out []Outcome
	for _, r := range table {
		if r.Unsafe {
			out = append(out, r.Outcome)
		}
	}
	return out
}

// OutcomeOf is the outcome a class of violation the checker finds counts
// as: non-linearizable (unsafe, with no finer name) for a class the table
// does not know.
func OutcomeOf(c checker.Class) Outcome {
	for _, r := range table {
		if slices.Contains(r.Classes, c) {
			return r.Outcome
		}
	}
	return NonLinearizable
}
