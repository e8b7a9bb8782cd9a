// Package shard splits a plan's cases over N runners, each computing the
// same split on its own: a pure function of the cases, their estimated
// costs and N, so CI jobs need no coordinator and no network between them.
package shard

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Spec is shard K of N, K counted from 1.
type Spec struct{ K, N int }

// String is the form --shard takes: K/N.
func (s Spec) String() string { return fmt.Sprintf("%d/%d", s.K, s.N) }

// Parse reads K/N (1 <= K <= N).
func Parse(s string) (Spec, error) {
	k, n, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Spec{}, fmt.Errorf("%q: want K/N, like 2/4 (shard 2 of 4)", s)
	}
	ki, kerr := strconv.Atoi(k)
	ni, nerr := strconv.Atoi(n)
	if kerr != nil || nerr != nil {
		return Spec{}, fmt.Errorf("%q: want K/N with whole numbers, like 2/4", s)
	}
	sp := Spec{K: ki, N: ni}
	return sp, sp.Validate()
}

// Validate checks 1 <= K <= N.
func (s Spec) Validate() error {
	if s.N < 1 || s.K < 1 || s.K > s.N {
		return fmt.Errorf("%d/%d: want 1 <= K <= N", s.K, s.N)
	}
	return nil
}

// CIVariables are the standard pairs of CI systems that run one job N
// times side by side, each naming the job's index and N; Base is what the
// first index is.
var CIVariables = []struct {
	System, Index, Total string
	Base                 int
}{
	{"GitLab (parallel: N)", "CI_NODE_INDEX", "CI_NODE_TOTAL", 1},
	{"Buildkite (parallelism: N)", "BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT", 0},
	{"CircleCI (parallelism: N)", "CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL", 0},
}

// FromEnv reads the shard from the first pair of CIVariables set, through
// getenv; ok is false when none is. One of a pair set without the other,
// or a value out of range, is an error naming the variables.
func FromEnv(getenv func(string) string) (s Spec, ok bool, err error) {
	for _, v := range CIVariables {
		index, total := getenv(v.Index), getenv(v.Total)
		if index == "" && total == "" {
			continue
		}
		if index == "" || total == "" {
			return Spec{}, false, fmt.Errorf("%s=%q and %s=%q: want both set, or neither", v.Index, index, v.Total, total)
		}
		k, kerr := strconv.Atoi(strings.TrimSpace(index))
		n, nerr := strconv.Atoi(strings.TrimSpace(total))
		s = Spec{K: k - v.Base + 1, N: n}
		if kerr != nil || nerr != nil || s.Validate() != nil {
			return Spec{}, false, fmt.Errorf("%s=%q, %s=%q: want an index from %d and a count past it", v.Index, index, v.Total, total, v.Base)
		}
		return s, true, nil
	}
	return Spec{}, false, nil
}

// Item is one unit of work to place: its key (unique, stable across
// runners: a case's name), its estimated cost, and its group: items that
// compete for the same thing when a shard runs them side by side (the
// same servers), which every shard should get its share of, or its wall
// time is not its summed cost.
type Item struct {
	Key   string
	Cost  time.Duration
	Group string
}

// Split assigns each item a shard, 1..n, in the items' order. Group by
// group (the costliest first), longest item first, each goes onto the
// shard with the least of its group, then the least in all, then the
// first; equal costs are taken in the order of their keys, so every
// runner computes the same split.
func Split(items []Item, n int) ([]int, error) {
	if n < 1 {
		return nil, fmt.Errorf("%d shards: want at least 1", n)
	}
	order := make([]int, len(items))
	seen := make(map[string]bool, len(items))
	for i, it := range items {
		if seen[it.Key] {
			return nil, fmt.Errorf("key %q given twice: keys must be unique", it.Key)
		}
		if it.Cost < 0 {
			return nil, fmt.Errorf("key %q: negative cost %v", it.Key, it.Cost)
		}
		seen[it.Key] = true
		order[i] = i
	}
	groupCost := map[string]time.Duration{}
	for _, it := range items {
		groupCost[it.Group] += it.Cost
	}
	slices.SortFunc(order, func(a, b int) int {
		ga, gb := items[a].Group, items[b].Group
		return cmp.Or(cmp.Compare(groupCost[gb], groupCost[ga]), strings.Compare(ga, gb),
			cmp.Compare(items[b].Cost, items[a].Cost), strings.Compare(items[a].Key, items[b].Key))
	})
	load, inGroup := make([]time.Duration, n), make([]time.Duration, n)
	out := make([]int, len(items))
	for j, i := range order {
		if j > 0 && items[order[j-1]].Group != items[i].Group {
			clear(inGroup)
		}
		least := 0
		for s := 1; s < n; s++ {
			if inGroup[s] < inGroup[least] || inGroup[s] == inGroup[least] && load[s] < load[least] {
				least = s
			}
		}
		load[least] += items[i].Cost
		inGroup[least] += items[i].Cost
		out[i] = least + 1
	}
	return out, nil
}

// Loads is the summed cost of each shard (index 0 is shard 1) under a
// split.
func Loads(items []Item, split []int, n int) []time.Duration {
	load := make([]time.Duration, n)
	for i, s := range split {
		load[s-1] += items[i].Cost
	}
	return load
}

// ErrEmpty is returned by Pick when a shard gets nothing (fewer items than
// shards): a runner with nothing to run is a mistake in N.
var ErrEmpty = errors.New("no case falls to this shard")

// Pick returns the indexes of the items shard s runs, in the items' order.
func Pick(items []Item, s Spec) ([]int, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	split, err := Split(items, s.N)
	if err != nil {
		return nil, err
	}
	var mine []int
	for i, k := range split {
		if k == s.K {
			mine = append(mine, i)
		}
	}
	if len(mine) == 0 {
		return nil, fmt.Errorf("shard %v of %d case(s): %w (want at most %d shards)", s, len(items), ErrEmpty, len(items))
	}
	return mine, nil
}
