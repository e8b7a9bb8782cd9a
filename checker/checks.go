package checker

import "github.com/locklab/locklab/history"

// check is one kind of anomaly the checker looks for, composed as
// porcupine's Model and Jepsen's compose are: a new class of violation is
// a check (its file and its Class constant), a line in newChecks, and a
// row of verdict's outcome table.
type check interface {
	// classes are the classes of violation it can find.
	classes() []Class
	// found are the violations in the events added so far; s is the mutex
	// check's sweep of them, which checks of the holders' tenures read.
	found(s sweep) []Violation
}

// eventReader is a check that reads the events itself.
type eventReader interface {
	Add(ev history.Event)
}

// sweep is what the mutex check made of the events added so far.
type sweep struct {
	origin   int64
	tenures  tenures
	grants   []DoubleGrant
	phantoms []Phantom
}

// newChecks are the checks, in the order a verdict lists what they found;
// resources is the resource check, which the verdict reads more of.
func newChecks(resources *Resources) []check {
	return []check{doubleGrants{}, phantoms{}, tokenOrders{}, resources, NewRenewals()}
}

// Classes are the classes of violation the checks find, in the order a
// verdict lists them.
func Classes() []Class {
	var out []Class
	for _, ch := range newChecks(NewResources()) {
		out = append(out, ch.classes()...)
	}
	return out
}
