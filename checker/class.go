package checker

// Class is the class of a violation, as Verdict.Classes counts it and
// results.json's violation_kinds names it. Callers switch on the constants;
// the strings are what people read and what earlier results files hold.
type Class string

// The classes of violation the checks find.
const (
	// DoubleGrantBothValid: the second grant came while the first holder's
	// lease was still valid.
	DoubleGrantBothValid Class = "double grant: " + BothValid
	// DoubleGrantHeldAtOnce: the second grant came while the first holder
	// held the lock, and neither recorded a lease (a plain mutex's
	// history): the service broke mutual exclusion, as with both leases
	// valid, with no lease to speak of.
	DoubleGrantHeldAtOnce Class = "double grant: " + HeldAtOnce
	// DoubleGrantOutlived: the first holder went on past its own lease.
	DoubleGrantOutlived Class = "double grant: " + OutlivedLease
	// DoubleGrantNeverReleased (mutex model): the second grant came after
	// the first holder's release failed or it crashed, or went to the
	// holder itself: nothing had freed the lock.
	DoubleGrantNeverReleased Class = "double grant: " + NeverReleased
	// Revoked is a lock taken away from its holder: another client was
	// granted it while the holder still held it, and the holder was told
	// (its release or extend answered "not held", or a Lost signal).
	Revoked Class = "revoked"
	// RevokedInRelease (lease model) is no violation but an anomaly: a
	// holder's release was answered "not held". Its lease had gone before
	// the release reached the server: the lock was granted to another
	// while the release was in flight, or to nobody meanwhile.
	RevokedInRelease Class = "revoked during release"
	// PhantomRelease is a release that succeeded for a process that did
	// not hold the lock.
	PhantomRelease Class = "phantom release"
	LostUpdate     Class = "lost update"
	StaleWrite     Class = "stale write"
	DuplicateTask  Class = "task processed twice"
	TokenRegressed Class = "fencing token did not increase"
	// RenewedAfterRelease is an extend that succeeded after its process
	// had released the key (a watchdog that outlived the release).
	RenewedAfterRelease Class = "renewed after release"
)

// LinStatus is the result of the linearizability check of a history.
type LinStatus string

const (
	LinYes     LinStatus = "yes"
	LinNo      LinStatus = "no"
	LinSkipped LinStatus = "skipped" // the checker was built without it (New(false))
	// LinNotChecked: nothing was recorded, so no checker ran. The checker
	// never returns it; results of runs without a history say it.
	LinNotChecked LinStatus = "not checked"
)
