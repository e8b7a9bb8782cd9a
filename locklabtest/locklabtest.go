// Package locklabtest tests a lock from its own module's `go test`, in the
// way golang.org/x/net/nettest.TestConn tests a net.Conn and
// testing/fstest.TestFS an fs.FS: describe the lock as an impls.Approach
// (its name, the server kind it runs on, what it declares, and a
// constructor of one client), and
//
//   - TestLocker runs locklab's conformance suite on it: every capability
//     it declares must hold, on real servers locklab starts for the test;
//   - RunScenario runs a scenario file on it (clients, faults and what
//     must happen: see locklab's scenarios/) and fails the test when the
//     lock does not do what the file expects of it.
//
// A test file, as example_test.go has it:
//
//	var myLock = impls.Approach{
//		Name:   "my-lock",
//		Server: impls.Redis,
//		Safe:   true, // keeps mutual exclusion when nothing goes wrong
//		Caps:   impls.Capabilities{TTL: true, Renewal: true},
//		New: func(ctx context.Context, env impls.Env) (impls.Locker, error) {
//			return mylock.Dial(ctx, env.Endpoints[impls.Redis].Addrs[0], env.Clock)
//		},
//	}
//
//	// Main makes this test binary a lock client too, for scenarios that
//	// pause or kill clients: those run each client as a process.
//	func TestMain(m *testing.M) { os.Exit(locklabtest.Main(m, myLock)) }
//
//	func TestMyLock(t *testing.T) { locklabtest.TestLocker(t, myLock) }
//
//	func TestMyLockUnderGCPause(t *testing.T) {
//		locklabtest.RunScenario(t, myLock, "testdata/gc-pause-past-ttl.yaml")
//	}
//
// The servers are the real binaries (redis-server, mariadbd, ZooKeeper,
// etcd, PostgreSQL: scripts/deps.sh installs them), started on 127.0.0.1
// with free ports for the test and stopped after it; they die with the
// test binary if it is killed.
package locklabtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"testing"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/conformance"
	"github.com/locklab/locklab/fleet"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/runner"
)

// workerFlag marks a test binary started again as one client of a
// scenario. It is a flag the test binary does not define, so a binary
// whose TestMain does not call Main fails at once ("flag provided but not
// defined") instead of running the tests again.
const workerFlag = "-locklabtest.worker"

// Main runs the package's tests; in a process RunScenario started as one
// lock client, it is that client instead. Scenarios whose clients run as
// processes (clients: {as: processes}, or a fault that pauses or kills a
// client: a SIGSTOP must stop the whole client) need it: call it from
// TestMain with every approach the tests give RunScenario.
func Main(m *testing.M, approaches ...impls.Approach) int {
	if !slices.Contains(os.Args[1:], workerFlag) {
		return m.Run()
	}
	reg := impls.NewRegistry()
	for _, a := range approaches {
		reg.Register(a)
	}
	// A Ctrl-C is for the test process: it stops its clients itself, by
	// closing their stdin, so that held locks are released first.
	signal.Ignore(os.Interrupt, syscall.SIGHUP)
	if err := fleet.ServeWorker(context.Background(), reg, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "locklabtest worker: %v\n", err)
		return 3
	}
	return 0
}

// TestLocker starts servers of a.Server, runs the conformance suite on a
// as subtests of t (what a does not declare is skipped, saying why), and
// stops the servers.
func TestLocker(t *testing.T, a impls.Approach) {
	t.Helper()
	if err := check(a); err != nil {
		t.Fatal(err)
	}
	c, err := runner.StartServers(t.Context(), nil, nil, []impls.Server{a.Server})
	if err != nil {
		t.Fatalf("locklabtest: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	h, err := conformance.HarnessFor(c, a)
	if err != nil {
		t.Fatalf("locklabtest: %v", err)
	}
	conformance.Run(t, h)
}

// check refuses an approach locklab cannot run, before a server starts.
func check(a impls.Approach) error {
	switch {
	case a.Name == "":
		return errors.New("locklabtest: the approach has no Name")
	case a.New == nil:
		return fmt.Errorf("locklabtest: approach %s has no New (the constructor of one lock client)", a.Name)
	}
	if _, err := cluster.KindOf(a.Server); err != nil {
		return fmt.Errorf("locklabtest: approach %s: %w", a.Name, err)
	}
	return nil
}
