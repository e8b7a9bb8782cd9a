package shard

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Spec
		bad  bool
	}{
		{in: "1/1", want: Spec{1, 1}},
		{in: "2/4", want: Spec{2, 4}},
		{in: " 4/4 ", want: Spec{4, 4}},
		{in: "0/4", bad: true},
		{in: "5/4", bad: true},
		{in: "1/0", bad: true},
		{in: "2", bad: true},
		{in: "a/4", bad: true},
		{in: "1/4/2", bad: true},
	} {
		got, err := Parse(c.in)
		if (err != nil) != c.bad || !c.bad && got != c.want {
			t.Errorf("Parse(%q) = %v, %v; want %v (error: %v)", c.in, got, err, c.want, c.bad)
		}
	}
}

func TestFromEnv(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		want Spec
		ok   bool
		bad  bool
	}{
		{name: "unset"},
		{name: "gitlab, 1-based", env: map[string]string{"CI_NODE_INDEX": "3", "CI_NODE_TOTAL": "4"}, want: Spec{3, 4}, ok: true},
		{name: "buildkite, 0-based", env: map[string]string{"BUILDKITE_PARALLEL_JOB": "0", "BUILDKITE_PARALLEL_JOB_COUNT": "4"}, want: Spec{1, 4}, ok: true},
		{name: "circleci, 0-based", env: map[string]string{"CIRCLE_NODE_INDEX": "3", "CIRCLE_NODE_TOTAL": "4"}, want: Spec{4, 4}, ok: true},
		{name: "index only", env: map[string]string{"CI_NODE_INDEX": "3"}, bad: true},
		{name: "total only", env: map[string]string{"CI_NODE_TOTAL": "4"}, bad: true},
		{name: "gitlab's index from 0", env: map[string]string{"CI_NODE_INDEX": "0", "CI_NODE_TOTAL": "4"}, bad: true},
		{name: "circleci's index past the count", env: map[string]string{"CIRCLE_NODE_INDEX": "4", "CIRCLE_NODE_TOTAL": "4"}, bad: true},
		{name: "not a number", env: map[string]string{"CI_NODE_INDEX": "x", "CI_NODE_TOTAL": "4"}, bad: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok, err := FromEnv(func(k string) string { return c.env[k] })
			if (err != nil) != c.bad || ok != c.ok || got != c.want {
				t.Errorf("got %v, %v, %v; want %v, %v, error %v", got, ok, err, c.want, c.ok, c.bad)
			}
		})
	}
}

// items are n items of costs from 1 s to 60 s, some equal, in a seeded
// order.
func items(n int, seed uint64) []Item {
	r := rand.New(rand.NewPCG(seed, 0))
	out := make([]Item, n)
	for i := range out {
		out[i] = Item{Key: fmt.Sprintf("case-%03d", i), Cost: time.Duration(1+r.IntN(60)) * time.Second}
	}
	return out
}

// The same items in another order get the same shard each: the split
// depends on the items, not on the order a runner listed them in.
func TestSplitIsDeterministic(t *testing.T) {
	its := items(200, 1)
	a, err := Split(its, 4)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Split(its, 4)
	if !slices.Equal(a, b) {
		t.Fatal("two splits of the same items differ")
	}
	byKey := map[string]int{}
	for i, it := range its {
		byKey[it.Key] = a[i]
	}
	shuffled := slices.Clone(its)
	rand.New(rand.NewPCG(7, 7)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	c, _ := Split(shuffled, 4)
	for i, it := range shuffled {
		if c[i] != byKey[it.Key] {
			t.Fatalf("%s: shard %d, %d in the original order", it.Key, c[i], byKey[it.Key])
		}
	}
}

// Every item falls to exactly one shard: the shards' picks are disjoint
// and cover every item.
func TestPickIsCompleteAndDisjoint(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 7} {
		its := items(50, uint64(n))
		seen := make([]int, len(its))
		for k := 1; k <= n; k++ {
			mine, err := Pick(its, Spec{k, n})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.IsSorted(mine) {
				t.Errorf("shard %d/%d: not in the items' order: %v", k, n, mine)
			}
			for _, i := range mine {
				seen[i]++
			}
		}
		for i, c := range seen {
			if c != 1 {
				t.Errorf("N=%d: %s falls to %d shards", n, its[i].Key, c)
			}
		}
	}
}

func TestSplitBalances(t *testing.T) {
	its := items(120, 3)
	split, _ := Split(its, 4)
	loads := Loads(its, split, 4)
	if lo, hi := slices.Min(loads), slices.Max(loads); float64(hi) > 1.2*float64(lo) {
		t.Fatalf("loads %v: the longest more than 20%% past the shortest", loads)
	}
}

// Equal costs are placed by key, whatever the order they came in.
func TestSplitBreaksTiesByKey(t *testing.T) {
	its := []Item{{Key: "c", Cost: time.Second}, {Key: "a", Cost: time.Second}, {Key: "b", Cost: time.Second}}
	split, _ := Split(its, 2)
	if want := []int{1, 1, 2}; !slices.Equal(split, want) { // a->1, b->2, c->1
		t.Fatalf("split %v, want %v", split, want)
	}
}

func TestSplitRefuses(t *testing.T) {
	if _, err := Split([]Item{{Key: "a", Cost: 1}, {Key: "a", Cost: 2}}, 2); err == nil {
		t.Error("a doubled key was taken")
	}
	if _, err := Split([]Item{{Key: "a", Cost: -1}}, 2); err == nil {
		t.Error("a negative cost was taken")
	}
	if _, err := Split(nil, 0); err == nil {
		t.Error("0 shards were taken")
	}
	if _, err := Pick([]Item{{Key: "a", Cost: 1}}, Spec{2, 2}); !errors.Is(err, ErrEmpty) {
		t.Errorf("an empty shard: %v", err)
	}
	if _, err := Pick([]Item{{Key: "a", Cost: 1}}, Spec{3, 2}); err == nil {
		t.Error("shard 3/2 was taken")
	}
}
