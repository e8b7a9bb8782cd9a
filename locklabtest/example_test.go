package locklabtest_test

import (
	"os"
	"testing"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/redis"
	"github.com/locklab/locklab/locklabtest"
)

// myLock is a lock as locklab sees it: a name, the server kind it runs on,
// what it declares (the suite tests each declaration, and skips what is
// not declared), and a constructor of one client. Yours calls your own
// constructor; this one borrows locklab's SET NX PX lock with a Lua
// compare-and-delete release.
var myLock = impls.Approach{
	Name:   "my-lock",
	Server: impls.Redis,
	Safe:   true, // keeps mutual exclusion when nothing goes wrong
	Caps:   impls.Capabilities{TTL: true, Renewal: true},
	New:    redis.SetNXPXLuaApproach.New, // func(ctx, impls.Env) (impls.Locker, error)
}

// TestMain makes this test binary a lock client too: a scenario that
// pauses or kills a client runs each client as a process of its own.
func TestMain(m *testing.M) { os.Exit(locklabtest.Main(m, myLock, homeDelLock, homeLuaLock)) }

// TestMyLock: every promise myLock declares holds on a real Redis.
func TestMyLock(t *testing.T) { locklabtest.TestLocker(t, myLock) }

// TestMyLockUnderGCPause: a holder paused past its TTL (SIGSTOP of its
// process) while another is granted the lock; the scenario expects of any
// lock without fencing a double grant the paused holder outlived and a
// lost update, and the test fails if myLock does otherwise. Your copy
// lives in your testdata/.
func TestMyLockUnderGCPause(t *testing.T) {
	locklabtest.RunScenario(t, myLock, "../scenarios/gc-pause-past-ttl.yaml")
}
