package redis

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/stall"
)

// tokensOn reads key on every Redis node: the value there, "" if none.
func tokensOn(ctx context.Context, t *testing.T, key string) []string {
	t.Helper()
	var vals []string
	for _, a := range testCluster.DirectEndpoints()[impls.Redis].Addrs {
		c := newClientNoPing(a)
		v, _ := c.Get(ctx, key).Result()
		c.Close()
		vals = append(vals, v)
	}
	return vals
}

// holders counts the nodes whose value is token.
func holders(vals []string, token string) (n int) {
	for _, v := range vals {
		if v == token {
			n++
		}
	}
	return n
}

// infoCount reads a counter from an INFO section of the node c is
// connected to ("calls" of cmdstat_set in commandstats,
// total_connections_received in stats).
func infoCount(ctx context.Context, t *testing.T, c *goredis.Client, section string, re *regexp.Regexp) int {
	t.Helper()
	info, err := c.Info(ctx, section).Result()
	if err != nil {
		t.Fatal(err)
	}
	m := re.FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

var setCallsRE = regexp.MustCompile(`cmdstat_set:calls=(\d+)`)

// setCalls counts the SET commands node i has run.
func setCalls(ctx context.Context, t *testing.T, i int) int {
	t.Helper()
	c := newClientNoPing(testCluster.DirectEndpoints()[impls.Redis].Addrs[i])
	defer c.Close()
	return infoCount(ctx, t, c, "commandstats", setCallsRE)
}

// setOn writes a foreign value on node i, as another client's lock would be.
func setOn(ctx context.Context, t *testing.T, i int, key, val string) {
	t.Helper()
	c := newClientNoPing(testCluster.DirectEndpoints()[impls.Redis].Addrs[i])
	defer c.Close()
	if err := c.Set(ctx, key, val, 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
}

// redis-redlock-quorum asks a bare majority first and the others only
// when needed; redis-redlock asks every node. Each case sets the stage
// (foreign locks on some nodes), acquires, and counts where the token is.
func TestRedlockQuorumFirst(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, tc := range []quorumCase{
		{"all nodes, free", RedlockApproach, nil, true, []int{0, 1, 2, 3, 4}, nil, nil},
		{"quorum first, free: three nodes only", RedlockQuorumApproach, nil, true, []int{0, 1, 2}, []int{3, 4}, []int{3, 4}},
		{"quorum first, one of three taken: the others asked", RedlockQuorumApproach, []int{1}, true, []int{0, 2, 3, 4}, []int{1}, nil},
		// Another client holds the first three, as a quorum-first holder
		// does: the other two cannot make a majority, and taking them
		// would only stand in the way of the next holder.
		{"quorum first, the first three taken: refused, the others never asked", RedlockQuorumApproach, []int{0, 1, 2}, false, nil, nil, []int{3, 4}},
		{"quorum first, two of three taken: the others asked", RedlockQuorumApproach, []int{0, 1}, true, []int{2, 3, 4}, []int{0, 1}, nil},
		{"quorum first, two taken among the rest: three suffice", RedlockQuorumApproach, []int{3, 4}, true, []int{0, 1, 2}, []int{3, 4}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A first majority slower than the hedge delay (a starved
			// machine) is asked beside the others by design: such a try
			// says nothing of which nodes a prompt round asks.
			for try := 1; !tc.run(ctx, t, fmt.Sprintf("redlock-quorum-%s-%d", tc.name, try)); try++ {
				if try == 5 {
					t.Fatalf("%d acquires, each slower than the hedge delay (%v)", try, hedgeDelay(quorumCaseTTL))
				}
			}
		})
	}
}

var refusedFailedRE = regexp.MustCompile(`(\d+) refused, (\d+) failed or did not answer in time`)

// onlySlowNodes says whether err is a round that no node refused and some
// failed or did not answer in time.
func onlySlowNodes(err error) bool {
	if !errors.Is(err, impls.ErrNotAcquired) {
		return false
	}
	m := refusedFailedRE.FindStringSubmatch(err.Error())
	return m != nil && m[1] == "0" && m[2] != "0"
}

// quorumCase is a stage (foreign locks on some nodes), an acquire, and
// where its token must and must not be.
type quorumCase struct {
	name    string
	a       impls.Approach
	foreign []int // nodes holding another client's lock
	granted bool
	on      []int // nodes that must hold our token after the acquire
	notOn   []int // nodes that must not
	unasked []int // nodes that must never have been sent our SET
}

const quorumCaseTTL = 10 * time.Second

// run plays the case on key. It is false, and nothing is asserted of the
// nodes left unasked, when the acquire took longer than the hedge delay
// and asked them.
func (tc quorumCase) run(ctx context.Context, t *testing.T, key string) bool {
	for _, i := range tc.foreign {
		setOn(ctx, t, i, key, "someone-else")
	}
	l := newLocker(t, tc.a, 1)
	sets := map[int]int{}
	for _, i := range tc.unasked {
		sets[i] = setCalls(ctx, t, i)
	}
	start := time.Now()
	got, err := l.Acquire(ctx, key, impls.AcquireOptions{TTL: quorumCaseTTL, Try: true})
	took := time.Since(start)
	hedged := took >= hedgeDelay(quorumCaseTTL)
	if tc.granted && (errors.Is(err, impls.ErrIndeterminate) || onlySlowNodes(err)) && took >= nodeTimeout(quorumCaseTTL) {
		// The round ran out its node timeout with answers missing: the
		// nodes were slow (at a load of 35: "4 nodes may hold our
		// token"; with two busy loops beside the suite: "2 of 5 nodes
		// granted, 0 refused, 3 failed or did not answer in time"), which
		// says nothing of which nodes a round asks.
		t.Logf("acquire: %v after %v, past the node timeout: again", err, took)
		return false
	}
	if (err == nil) != tc.granted {
		t.Fatalf("acquire: err = %v, want granted %v", err, tc.granted)
	}
	for _, i := range tc.unasked {
		if n := setCalls(ctx, t, i) - sets[i]; n != 0 {
			if hedged {
				t.Logf("node %d asked after the hedge delay: the acquire took %v", i, time.Since(start))
				if got != nil {
					got.Release(ctx)
				}
				return false
			}
			t.Errorf("node %d ran %d SETs during the acquire, want it never asked", i, n)
		}
	}
	vals := tokensOn(ctx, t, key)
	if got == nil {
		// Refused: whatever it set, it took back.
		for i, v := range vals {
			if v != "" && v != "someone-else" {
				t.Errorf("node %d holds %q after a refused acquire (nodes: %q)", i, v, vals)
			}
		}
		return true
	}
	token := got.(*lease).token
	// The acquire returns at a majority; a straggler's SET
	// lands a moment later.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if vals = tokensOn(ctx, t, key); holders(vals, token) >= len(tc.on) {
			break
		}
	}
	for _, i := range tc.on {
		if vals[i] != token {
			t.Errorf("node %d holds %q, want our token (nodes: %q)", i, vals[i], vals)
		}
	}
	for _, i := range tc.notOn {
		if vals[i] == token {
			t.Errorf("node %d holds our token, want it never asked (nodes: %q)", i, vals)
		}
	}
	if err := got.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	// The release returns at a majority; a straggler's delete
	// lands a moment later.
	n := 0
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if n = holders(tokensOn(ctx, t, key), token); n == 0 {
			break
		}
	}
	if n != 0 {
		t.Errorf("2 s after release our token is still on %d nodes", n)
	}
	return true
}

// A quorum-first client whose first majority has a node that does not
// answer asks the others after the hedge delay, instead of spending the
// node timeout: node 0 stops serving writes for 2 s (CLIENT PAUSE), and
// the acquire must still be granted long before it comes back. The SET to
// node 0 lands when the pause ends, and the release, which went to every
// node asked, must have cleared it too.
func TestRedlockQuorumHedgesAStoppedNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := newLocker(t, RedlockQuorumApproach, 1)
	key := "redlock-quorum-hedge"
	admin := newClientNoPing(testCluster.DirectEndpoints()[impls.Redis].Addrs[0])
	defer admin.Close()
	const pause = 2 * time.Second
	if err := admin.Do(ctx, "CLIENT", "PAUSE", pause.Milliseconds(), "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	defer admin.Do(context.Background(), "CLIENT", "UNPAUSE")
	stalls := stall.NewWatch(t.Context())
	start := time.Now()
	got, err := l.Acquire(ctx, key, impls.AcquireOptions{TTL: 10 * time.Second, Try: true})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("acquire with node 0 paused: %v", err)
	}
	if took > pause/2+stalls.Within(start, start.Add(took)) {
		t.Fatalf("acquire took %v with node 0 paused for %v: it waited for the stopped node", took, pause)
	}
	token := got.(*lease).token
	if n := holders(tokensOn(ctx, t, key), token); n < 3 {
		t.Fatalf("granted with our token on %d nodes, want at least 3", n)
	}
	if err := got.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	time.Sleep(pause)
	if vals := tokensOn(ctx, t, key); holders(vals, token) != 0 {
		t.Fatalf("after the pause our token is left on some node: %q", vals)
	}
}
