package runner

import "errors"

// Error classes, for the CLI's exit codes. Errors are tagged with a class
// without changing their message.
var (
	ErrUsage = errors.New("bad usage")              // exit 2
	ErrInfra = errors.New("infrastructure failure") // exit 3
)

type classed struct{ class, err error }

func (c classed) Error() string   { return c.err.Error() }
func (c classed) Unwrap() []error { return []error{c.class, c.err} }

func usageErr(err error) error { return classed{ErrUsage, err} }
func infraErr(err error) error { return classed{ErrInfra, err} }
