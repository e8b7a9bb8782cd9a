package checker

// Class is the class of a violation, as Verdict.Classes counts it and
// results.json's violation_kinds names it. Each is declared beside the
// check that finds it (Classes lists them). Callers switch on the
// constants; the strings are what people read and what earlier results
// files hold.
type Class string

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
