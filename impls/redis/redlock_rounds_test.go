package redis

import (
	"bufio"
	"context"
	"net"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/impls"
)

// A Redlock acquire that takes several rounds uses a token of its own in
// each. A failed round's unlock goes on past unlockWait for a node that has
// not answered yet, and is sent once that node answers the round's SET: a
// delete by the same token would then remove the key a later round set
// there, and a lock granted on a majority would lose a node a moment later
// ("not held: 2 of 5 nodes", 30 ms after a grant, under two busy loops).
func TestRedlockRoundsUseTokensOfTheirOwn(t *testing.T) {
	for _, a := range []impls.Approach{RedlockApproach, RedlockQuorumApproach} {
		t.Run(a.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			addrs := testCluster.DirectEndpoints()[impls.Redis].Addrs
			key := "redlock-rounds-" + impls.NewToken()
			// MONITOR on a plain connection: go-redis's monitor reader waits
			// for the next line holding the lock its Stop (and the client's
			// Close) takes, and on a quiet node an idle make test hung there
			// 16 minutes. Closing this connection ends the reader.
			mon, err := net.Dial("tcp", addrs[0])
			if err != nil {
				t.Fatal(err)
			}
			defer mon.Close()
			if _, err := mon.Write([]byte("MONITOR\r\n")); err != nil {
				t.Fatal(err)
			}
			var (
				mu    sync.Mutex
				lines []string
			)
			read := make(chan struct{})
			go func() {
				defer close(read)
				sc := bufio.NewScanner(mon)
				sc.Buffer(make([]byte, 64<<10), 1<<20)
				for sc.Scan() {
					mu.Lock()
					lines = append(lines, sc.Text())
					mu.Unlock()
				}
			}()
			time.Sleep(200 * time.Millisecond) // MONITOR is on before the first SET
			// Another holder on nodes 2-4 for 500 ms: every round fails
			// until its keys expire.
			for _, ad := range addrs[2:] {
				c := newClientNoPing(ad)
				err := c.Set(ctx, key, "another-holder", 500*time.Millisecond).Err()
				c.Close()
				if err != nil {
					t.Fatal(err)
				}
			}
			l := newLocker(t, a, 1)
			lease, err := l.Acquire(ctx, key, impls.AcquireOptions{TTL: 5 * time.Second})
			if err != nil {
				t.Fatalf("acquire: %v", err)
			}
			if err := lease.Release(ctx); err != nil {
				t.Fatalf("release: %v", err)
			}
			time.Sleep(200 * time.Millisecond)
			mon.Close()
			<-read
			set := regexp.MustCompile(`(?i)"set" "` + regexp.QuoteMeta(key) + `" "([^"]+)"`)
			tokens := map[string]bool{}
			sets := 0
			for _, l := range lines {
				if g := set.FindStringSubmatch(l); g != nil {
					sets++
					tokens[g[1]] = true
				}
			}
			t.Logf("%d SETs of the key on node 0, %d tokens", sets, len(tokens))
			if sets < 2 {
				t.Fatalf("%d SETs on node 0: the acquire took one round, so the test showed nothing", sets)
			}
			if len(tokens) != sets {
				t.Fatalf("%d rounds' SETs on node 0 carried %d tokens: a round reused an earlier one's", sets, len(tokens))
			}
		})
	}
}
