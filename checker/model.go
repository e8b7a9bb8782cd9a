package checker

import "fmt"

// Model is what a history is judged against: both are the owner-aware
// mutex (acquire when free makes the caller the holder; release by the
// holder frees it), with Knossos's reading of outcomes (a failed operation
// never happened; an indeterminate one may take effect at one instant after
// its invocation, or never). They differ in what ends a tenure.
type Model string

const (
	// ModelMutex is Knossos's mutex: nothing expires. A holder holds until
	// a release of its own succeeds (or, indeterminate, may have); a
	// release answered "not held" failed, so it never happened and the
	// holder still holds; a crashed holder holds for ever. The default for
	// Jepsen's histories, which Knossos judges so.
	ModelMutex Model = "mutex"
	// ModelLease is locklab's: a lease may expire under its holder, so a
	// tenure ends at its release's invocation whatever the answer (a
	// release answered "not held" is the holder's news that its lease had
	// gone, reported as a revocation, not an impossibility), and a crash is
	// a release invoked at the crash whose outcome is unknown. The default
	// for locklab's own histories, whose locks are leases.
	ModelLease Model = "lease"
)

// Models lists the models, the default of locklab's histories last.
var Models = []Model{ModelMutex, ModelLease}

// ParseModel reads a model's name as --model takes it.
func ParseModel(s string) (Model, error) {
	for _, m := range Models {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown model %q (want mutex or lease)", s)
}

// ModelFor is the default model for a history format: Jepsen's EDN and
// JSON are judged as Knossos judges them (mutex), locklab's JSONL as the
// leases it records (lease).
func ModelFor(format string) Model {
	switch format {
	case "edn", "jepsen-json", "json":
		return ModelMutex
	}
	return ModelLease
}

// Describe says in a few words what the model takes a tenure to be.
func (m Model) Describe() string {
	switch m {
	case ModelMutex:
		return "mutex (Knossos's: no expiry; a holder holds until a release of its own succeeds)"
	case ModelLease:
		return "lease (a tenure ends at its release's invocation; a release answered not held is a revocation)"
	}
	return string(m)
}

// lockName is how a key reads in words: Jepsen's histories of one lock
// have none.
func lockName(key string) string {
	if key == "" {
		return "the lock"
	}
	return key
}
