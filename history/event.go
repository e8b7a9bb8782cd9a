// Package history defines the event every operation and fault becomes, and
// its JSONL encoding. A history file alone is enough to re-run the checker.
package history

import (
	"encoding/json"
	"fmt"
)

// Type is the phase of an operation, as in Jepsen.
type Type string

const (
	Invoke Type = "invoke" // the operation started
	OK     Type = "ok"     // it took effect
	Fail   Type = "fail"   // it certainly did not take effect
	Info   Type = "info"   // indeterminate: it may take effect at any later time
)

// Operation names.
const (
	Acquire = "acquire"
	Release = "release"
	Extend  = "extend"
	Read    = "read"
	Write   = "write"
	Nemesis = "nemesis"
)

// Event is one line of a history.
type Event struct {
	Index      int64           `json:"i"`
	Proc       int             `json:"proc"`
	Type       Type            `json:"type"`
	F          string          `json:"f"`
	Key        string          `json:"key,omitempty"`
	Value      json.RawMessage `json:"value,omitempty"`
	Token      *uint64         `json:"token,omitempty"`
	ValidUntil int64           `json:"valid_until,omitempty"` // believed expiry, CLOCK_MONOTONIC ns; 0 = none
	T          int64           `json:"t"`                     // CLOCK_MONOTONIC ns
	Error      string          `json:"error,omitempty"`
	// Reentry marks an acquire (its invoke and its answer) by a client
	// that holds the key already and asks again, meaning to: a re-entry,
	// legal under either model for the re-entrant lock it is asked of.
	// Each re-entry granted is given back by one more release.
	Reentry bool `json:"reentry,omitempty"`
}

// Validate reports what makes an event unusable by the checker.
func (e *Event) Validate() error {
	switch e.Type {
	case Invoke, OK, Fail, Info:
	default:
		return fmt.Errorf("unknown type %q", e.Type)
	}
	if e.F == "" {
		return fmt.Errorf("missing f")
	}
	return nil
}
