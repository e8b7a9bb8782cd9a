package runner

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
)

// Lanes: how a parallel run shares its cases out. Cases that ask for the
// same server options share one cluster; within it, lanes of servers run
// cases side by side: a server kind's nodes, and for a kind whose nodes
// make lanes (cluster.Kind.Lanes), spare nodes, each a lane of its own for
// the approaches that use one node, and a second lane for the others. A case
// whose faults reach a server has its lane to itself (a fault there meets
// no other case); cases whose faults reach only their own clients and
// links share a lane when the plan lets them (Plan.ShareServers). At most
// MaxCases run at once.

// DefaultMaxCases is how many cases a parallel run runs at once: six per
// CPU, since a case mostly waits on its faults' timings and its clients'
// holds (a matrix of one approach's row, 39 cases, spent 19 s of CPU in
// 45 s at twelve at once on 2 cores, with no stall of the lab).
func DefaultMaxCases() int { return max(2, 6*runtime.NumCPU()) }

// laneProcs is the size of each parallel lane's range of process ids.
const laneProcs = 1_000_000

// groupsByServers splits cases by the server options they ask for, in
// order of first appearance, keeping plan order within each group.
func groupsByServers(cases []Case) [][]Case {
	var out [][]Case
	for _, idx := range indicesByServers(cases) {
		out = append(out, pick(cases, idx))
	}
	return out
}

// indicesByServers is groupsByServers by index.
func indicesByServers(cases []Case) [][]int {
	var order []ServerOptions
	by := map[ServerOptions][]int{}
	for i, c := range cases {
		o := c.ServerOptions()
		if _, ok := by[o]; !ok {
			order = append(order, o)
		}
		by[o] = append(by[o], i)
	}
	out := make([][]int, len(order))
	for i, o := range order {
		out[i] = by[o]
	}
	return out
}

// spareNodeLanes is how many more lanes, at most, share out the cases of
// a kind's approaches that use one node (Approach.Nodes 1), each lane a
// node of its own: a case that restarts, pauses or moves the clock of its
// server needs one to itself, and such nodes cost little
// (cluster.Kind.Lanes). Half the cases that may run at once get one, so
// the other half can share one.
func spareNodeLanes(maxCases int) int { return max(2, maxCases/2) }

// lane is servers some cases share: a server kind's nodes, or some of
// them. A case whose faults reach a server has its lane to itself; in a
// plan that lets them (Plan.ShareServers), cases whose faults reach only
// their own clients and links share it (each on keys of its own).
type lane struct {
	name string
	// nodes are the nodes of its kind the lane's cases use.
	nodes laneNodes
	// The scheduler's, under its lock.
	sharing int  // cases running on it, sharing it
	whole   bool // a case has it to itself
	wanted  bool // a case waits to have it to itself: nobody starts sharing it
}

// laneNodes are the nodes of kind a lane's cases use: indices among the
// cluster's nodes of it; nil idx: all of them.
type laneNodes struct {
	kind impls.Server
	idx  []int
}

// nodeLayout is how a parallel run shares out the nodes of a kind whose
// nodes make lanes (cluster.Kind.Lanes) or ensembles (Kind.Ensembles): the
// lane of the approaches that use several nodes is nodes 0..shared-1;
// spare lanes, one node each, follow for the approaches that use one; then
// second more lanes of shared nodes each (an ensemble each), for the
// approaches that use several (a case that restarts, pauses or moves the
// clock of a node has its lane to itself: with one such lane, a matrix's
// Redlock cases under server faults ran one after the other, 1 min 43 s of
// the AOF group's, while the one-node cases beside them were done).
type nodeLayout struct{ shared, spare, second int }

// extra is how many nodes the layout needs beyond the shared lane's.
func (l nodeLayout) extra() int { return l.spare + l.second*l.shared }

// layouts are the node layouts of the kinds whose nodes make lanes.
type layouts map[impls.Server]nodeLayout

// planLanes makes the lanes of a group of cases and, per case, the lanes
// it may run on: its server kind's, except that with spare lanes of its
// kind a case of an approach that uses one node (onSpareLane) may run on
// any of them, lane i on node shared+i, and with a second lane the other
// cases of the kind may run on it as on the lane of nodes 0..shared-1
// (not one whose fault names a node: its name is a node of the first
// lane).
func planLanes(cases []Case, ls layouts) ([]*lane, [][]int) {
	var lanes []*lane
	at := map[string]int{} // lane name -> index in lanes
	laneOf := func(name string, kind impls.Server, idx []int) int {
		i, ok := at[name]
		if !ok {
			i = len(lanes)
			at[name] = i
			lanes = append(lanes, &lane{name: name, nodes: laneNodes{kind: kind, idx: idx}})
		}
		return i
	}
	cands := make([][]int, len(cases))
	for i, c := range cases {
		s := c.Approach.Server
		l := ls[s]
		nodes := func(from int) []int {
			idx := make([]int, l.shared)
			for j := range idx {
				idx[j] = from + j
			}
			return idx
		}
		switch {
		case l.spare > 0 && onSpareLane(c):
			for j := range l.spare {
				cands[i] = append(cands[i], laneOf(fmt.Sprintf("%s node %d", s, l.shared+j), s, []int{l.shared + j}))
			}
		case l.spare > 0 || l.second > 0:
			cands[i] = []int{laneOf(string(s), s, nodes(0))}
			for j := range l.second {
				if namesNode(c) {
					break
				}
				cands[i] = append(cands[i], laneOf(secondLaneName(s, j), s, nodes(l.shared+l.spare+j*l.shared)))
			}
		default:
			cands[i] = []int{laneOf(string(s), s, nil)}
		}
	}
	return lanes, cands
}

// secondLaneName names the j-th lane after the first of kind s's
// approaches that use several nodes.
func secondLaneName(s impls.Server, j int) string {
	if j == 0 {
		return string(s) + ", second lane"
	}
	return fmt.Sprintf("%s, lane %d", s, j+2)
}

// sharesServers reports whether c can run beside other cases on the same
// servers: none of its faults reaches a server or the links every client
// shares (only its own clients, their clocks and their own links).
func sharesServers(c Case) bool {
	for _, st := range c.Faults {
		if st.Target.Kind() == chaos.TargetNode {
			return false
		}
	}
	return true
}

// scheduler places cases on lanes: a case that shares takes the busiest
// lane of its own that nobody has or waits to have to itself (sharing
// cases pack together, leaving the others free); a case that needs a lane
// to itself takes one nobody uses, and while it waits keeps new cases off
// the least shared of its lanes, so it is not passed over for ever.
type scheduler struct {
	lanes []*lane
	cands [][]int
	share []bool // case i shares its lane
}

// place finds case i a lane and takes it (-1: none now). A placing pass
// calls it for the waiting cases in order, after clearWanted.
func (s *scheduler) place(i int) int {
	best := -1
	for _, li := range s.cands[i] {
		l := s.lanes[li]
		switch {
		case l.whole:
		case s.share[i] && !l.wanted && (best < 0 || l.sharing > s.lanes[best].sharing):
			best = li
		case !s.share[i] && l.sharing == 0 && best < 0:
			best = li
		}
	}
	if best >= 0 {
		if s.share[i] {
			s.lanes[best].sharing++
		} else {
			s.lanes[best].whole = true
		}
		return best
	}
	if !s.share[i] {
		// Wait for the least shared lane not already waited for.
		var want *lane
		for _, li := range s.cands[i] {
			if l := s.lanes[li]; !l.whole && !l.wanted && (want == nil || l.sharing < want.sharing) {
				want = l
			}
		}
		if want != nil {
			want.wanted = true
		}
	}
	return -1
}

// pass starts what can start now: for the waiting cases in order, while
// fewer than free are started, each that finds a lane is given to start
// (case, lane). It returns the cases still waiting.
func (s *scheduler) pass(waiting []int, free int, start func(i, li int)) []int {
	for _, l := range s.lanes {
		l.wanted = false
	}
	var rest []int
	for _, i := range waiting {
		if free > 0 {
			if li := s.place(i); li >= 0 {
				free--
				start(i, li)
				continue
			}
		}
		rest = append(rest, i)
	}
	return rest
}

// leave gives back the lane case i ran on.
func (s *scheduler) leave(i, li int) {
	if s.share[i] {
		s.lanes[li].sharing--
	} else {
		s.lanes[li].whole = false
	}
}

// caseOrder is the order in which a group's cases wait to start: by round
// (a matrix's run 1 of every cell before run 2, so a budget that runs out
// leaves every cell its first runs), then the longest first (the classic
// rule for finishing a set of jobs early on parallel machines), then plan
// order.
func caseOrder(cases []Case, cost func(Case) time.Duration) []int {
	order := make([]int, len(cases))
	costs := make([]time.Duration, len(cases)) // once each: a cost compiles the case's faults
	for i, c := range cases {
		order[i], costs[i] = i, cost(c)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmp.Compare(cases[a].Round, cases[b].Round); c != 0 {
			return c
		}
		return cmp.Compare(costs[b], costs[a])
	})
	return order
}

// layouts is, for each kind whose nodes make lanes or ensembles, how many
// nodes the lane of its approaches that use them all gets (shared: the
// kind's nodes), how many spare lanes, each on a node of its own, the
// one-node approaches get, and whether the others get a second lane: only
// in parallel, and not on a user's cluster, whose servers are what they
// are. A plan runs one ensemble of a kind whose nodes make them: its
// cases of that kind run beside its others (a matrix's rows of every
// kind), and a regression's JVM clients under two busy loops missed the
// race they reproduce more often beside a second ensemble's. A session
// that picks its cases as it goes may get more (forCasesToCome).
func (p Plan) layouts(parallel bool, maxCases int) layouts {
	out := layouts{}
	for _, k := range cluster.Kinds() {
		if !k.Lanes && !k.Ensembles {
			continue
		}
		l := nodeLayout{shared: k.Nodes}
		if parallel && p.External == nil && k.Lanes {
			l.spare = spareLanes(p.Cases, k.Server, maxCases)
			if secondLaneCases(p.Cases, k.Server) > 1 {
				l.second = 1
			}
		}
		out[k.Server] = l
	}
	return out
}

// moreEnsembles is how many ensembles at most a parallel run starts
// beside the first of a kind whose nodes make them: four of ZooKeeper's
// are twelve JVMs, which start side by side in about the time of three.
const moreEnsembles = 3

// secondLanes is how many lanes of kind k's approaches that use several
// nodes a session whose cases come as it goes gets beside the first, at
// most atOnce cases at once: a kind whose nodes make lanes gets one; a
// kind whose nodes make an ensemble, whose every case faulting a server
// waits for the one ensemble (a search of zk-ephemeral ran a fifth as many
// cases a minute as one of redis-setnx-px-lua, its slots idle four fifths
// of the time), one for each other case that may run at once, at most
// moreEnsembles.
func secondLanes(k cluster.Kind, atOnce int) int {
	if !k.Ensembles {
		return 1
	}
	return max(0, min(atOnce-1, moreEnsembles))
}

// secondLaneCases is how many of cases may run on a second lane of kind
// s's approaches that use several nodes.
func secondLaneCases(cases []Case, s impls.Server) int {
	n := 0
	for _, c := range cases {
		if c.Approach.Server == s && !onSpareLane(c) && !namesNode(c) {
			n++
		}
	}
	return n
}

// spareLanes is how many spare lanes of kind s a parallel run of cases, at
// most maxCases at once, gets: one per case of it that may run on one
// (onSpareLane), at most spareNodeLanes.
func spareLanes(cases []Case, s impls.Server, maxCases int) int {
	n := 0
	for _, c := range cases {
		if c.Approach.Server == s && onSpareLane(c) {
			n++
		}
	}
	return min(n, spareNodeLanes(maxCases))
}

// onSpareLane reports whether c may run on a spare lane: its approach uses
// one node of a kind whose nodes make lanes and no fault of it names a
// node (a name of the shared lane's nodes; a spare lane's node has
// another).
func onSpareLane(c Case) bool {
	k, err := cluster.KindOf(c.Approach.Server)
	return err == nil && k.Lanes && c.Approach.Nodes == 1 && !namesNode(c)
}

// namesNode reports whether a fault of c names a node (or nodes) rather
// than a mode.
func namesNode(c Case) bool {
	for _, st := range c.Faults {
		if len(st.Target.Nodes) > 0 || namedNode(st.Target.Node) {
			return true
		}
	}
	return false
}

// namedNode reports whether a selector's node is a node's name rather than
// a mode (first, one, majority, leader, ...).
func namedNode(node string) bool {
	switch node {
	case "", chaos.NodeFirst, chaos.NodeOne, chaos.NodeMinority, chaos.NodeMajority, chaos.NodeAll, chaos.NodeLeader, chaos.NodeFollower, chaos.NodeFollowers:
		return false
	}
	return true
}

// newScheduler is the scheduler of a group of cases; share: cases whose
// faults reach no server share their lane (Plan.ShareServers).
func newScheduler(cases []Case, share bool, ls layouts) *scheduler {
	lanes, cands := planLanes(cases, ls)
	s := &scheduler{lanes: lanes, cands: cands, share: make([]bool, len(cases))}
	for i, c := range cases {
		s.share[i] = share && sharesServers(c)
	}
	return s
}
