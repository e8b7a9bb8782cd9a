package adapter

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/locklab/locklab/impls/all"
)

// TestMain lets the test binary be the reference adapter: called as
// `BINARY adapt APPROACH` (testdata/reference.yaml does, through
// $LOCKLAB), it serves a built-in approach as `locklab adapt` does.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "adapt" {
		a, err := all.Registry().Get(os.Args[2])
		if err == nil {
			err = Serve(context.Background(), a, os.Stdin, os.Stdout)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "adapt:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
