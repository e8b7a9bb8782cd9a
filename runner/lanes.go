package runner

import (
	"fmt"
	"runtime"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
)

// Lanes: how a parallel run shares its cases out. Cases that ask for the
// same server options share one cluster; within it, lanes of different
// server kinds run side by side (a fault on one kind's servers cannot
// touch another kind's case), and cases of one lane run in order.

// DefaultMaxCases is how many cases a parallel run runs at once: two per
// CPU, since a case mostly waits on its servers and its clients' holds.
func DefaultMaxCases() int { return max(2, 2*runtime.NumCPU()) }

// laneProcs is the size of each parallel lane's range of process ids.
const laneProcs = 1_000_000

// groupsByServers splits cases by the server options they ask for, in
// order of first appearance, keeping plan order within each group.
func groupsByServers(cases []Case) [][]Case {
	var order []ServerOptions
	by := map[ServerOptions][]Case{}
	for _, c := range cases {
		o := c.servers()
		if _, ok := by[o]; !ok {
			order = append(order, o)
		}
		by[o] = append(by[o], c)
	}
	out := make([][]Case, len(order))
	for i, o := range order {
		out[i] = by[o]
	}
	return out
}

// spareRedisLanes is how many more lanes share out the Redis approaches
// that use one node (Approach.Nodes 1), each lane on a Redis node of its
// own: Redis has the most approaches, and its one lane alone set the
// length of a parallel matrix. More would crowd 2 cores.
const spareRedisLanes = 2

// lane is cases that run one after the other on the same servers, beside
// other lanes: a fault on its servers meets only its own cases.
type lane struct {
	cases []Case
	// redis are the indices, among the cluster's Redis nodes, of those the
	// lane's cases use; nil: all of them.
	redis []int
}

// planLanes splits cases into lanes: one per server kind, in plan order,
// except that with spare > 0 the Redis approaches that use one node go to
// spare lanes of their own (an approach's cases all in one), lane i on
// Redis node shared+i, and the other Redis approaches to a lane on nodes
// 0..shared-1.
func planLanes(cases []Case, shared, spare int) []lane {
	var out []lane
	at := map[string]int{}      // lane name -> index in out
	spareOf := map[string]int{} // approach -> its spare lane
	for _, c := range cases {
		name, redis := string(c.Approach.Server), []int(nil)
		if spare > 0 && c.Approach.Server == impls.Redis {
			if onSpareLane(c) {
				i, ok := spareOf[c.Approach.Name]
				if !ok {
					i = len(spareOf) % spare
					spareOf[c.Approach.Name] = i
				}
				name, redis = fmt.Sprintf("redis node %d", shared+i), []int{shared + i}
			} else {
				redis = make([]int, shared)
				for i := range redis {
					redis[i] = i
				}
			}
		}
		i, ok := at[name]
		if !ok {
			i = len(out)
			at[name] = i
			out = append(out, lane{redis: redis})
		}
		out[i].cases = append(out[i].cases, c)
	}
	return out
}

// redisLanes is how many Redis nodes the lane of the approaches that use
// them all gets (shared), and how many spare lanes, each on a node of its
// own, the one-node approaches get: only in parallel, and not on a user's
// cluster, whose servers are what they are.
func (p Plan) redisLanes(parallel bool) (shared, spare int) {
	shared = cluster.ForServers(impls.Redis).Nodes[impls.Redis]
	if parallel && p.External == nil {
		spare = spareLanes(p.Cases)
	}
	return shared, spare
}

// spareLanes is how many spare Redis lanes a parallel run of cases gets:
// one per approach that uses one Redis node, at most spareRedisLanes.
func spareLanes(cases []Case) int {
	single := map[string]bool{}
	for _, c := range cases {
		if onSpareLane(c) {
			single[c.Approach.Name] = true
		}
	}
	return min(len(single), spareRedisLanes)
}

// onSpareLane reports whether c may run on a spare Redis lane: its approach
// uses one Redis node and no fault of it names a node (redis-0 is a node of
// the shared lane; a spare lane's node has another name).
func onSpareLane(c Case) bool {
	if c.Approach.Server != impls.Redis || c.Approach.Nodes != 1 {
		return false
	}
	for _, st := range c.Faults {
		if len(st.Target.Nodes) > 0 || namedNode(st.Target.Node) {
			return false
		}
	}
	return true
}

// namedNode reports whether a selector's node is a node's name rather than
// a mode (first, one, majority, leader, ...).
func namedNode(node string) bool {
	switch node {
	case "", chaos.NodeFirst, chaos.NodeOne, chaos.NodeMinority, chaos.NodeMajority, chaos.NodeAll, chaos.NodeLeader, chaos.NodeFollower:
		return false
	}
	return true
}

// Estimate is about how long p takes to run, allowing perCase on top of
// each case's duration: the sum of its cases one after the other, or in
// parallel the longest lane of each cluster's group (a group starts when
// the one before it ended).
func Estimate(p Plan, parallel bool, maxCases int, perCase time.Duration) time.Duration {
	cost := func(cases []Case) time.Duration {
		var d time.Duration
		for _, c := range cases {
			d += c.Workload.Duration + perCase
		}
		return d
	}
	if !parallel {
		return cost(p.Cases)
	}
	var total time.Duration
	shared, spare := p.redisLanes(parallel)
	if maxCases <= 0 {
		maxCases = DefaultMaxCases()
	}
	for _, group := range groupsByServers(p.Cases) {
		var longest time.Duration
		for _, l := range planLanes(group, shared, spare) {
			longest = max(longest, cost(l.cases))
		}
		// No lane ends before its own cases, nor the group before its
		// cases have shared out the slots.
		total += max(longest, cost(group)/time.Duration(maxCases))
	}
	return total
}
