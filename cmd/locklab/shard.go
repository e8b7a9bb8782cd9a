package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/shard"
	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

// shardFileName is the file a shard's results folder (and a merged one)
// says which shard of which plan it holds in.
const shardFileName = "shard.json"

// shardRecord is shard.json: what `locklab merge` needs to check that
// folders are shards of one plan and to fold them into one.
type shardRecord struct {
	Kind string `json:"kind"` // matrix, run, bench, explore
	// Title is the plan's kind as its summary names it ("run NAME").
	Title string `json:"title"`
	// Plan is a hash of the whole plan (every case of every shard, as it
	// runs): shards of one plan have the same.
	Plan    string `json:"plan"`
	K       int    `json:"shard,omitempty"`
	N       int    `json:"of"`
	Version string `json:"locklab_version"`
	Command string `json:"command"`
	// PlanCases counts the whole plan's cases; Cases are this shard's, At
	// their places in the whole plan.
	PlanCases int      `json:"plan_cases"`
	Cases     []string `json:"cases,omitempty"`
	At        []int    `json:"at,omitempty"`
	// Matrix: the cells and the rule over their runs, to judge the
	// merged cells by.
	Matrix *matrixShard `json:"matrix,omitempty"`
	// Repeats and Need are run --runs' runs of each approach and --need
	// (0: all).
	Repeats int `json:"repeats,omitempty"`
	Need    int `json:"need,omitempty"`
	// Explore says what this shard explored: its seed and approaches.
	Explore *exploreShard `json:"explore,omitempty"`
	// Merged, in a merged folder, are the shards it holds, From the
	// folders they came from.
	Merged []int    `json:"merged,omitempty"`
	From   []string `json:"from,omitempty"`
}

// matrixShard is what a matrix shard records of its cells.
type matrixShard struct {
	Cells        []matrix.Cell `json:"cells"`
	Runs         int           `json:"runs_per_cell"`
	MinCatchRate float64       `json:"min_catch_rate,omitempty"`
}

// exploreShard is an explore shard's own seed and approaches.
type exploreShard struct {
	Seed       uint64   `json:"seed"`
	Approaches []string `json:"approaches"`
}

// shardFlag is --shard K/N (or "ci": the CI system's standard variables,
// shard.CIVariables).
type shardFlag struct{ s *string }

func addShardFlag(fs *flag.FlagSet, what string) shardFlag {
	return shardFlag{s: fs.String("shard", "", "run shard K of N of "+what+", K/N (1-based; 'ci': the CI's variables: GitLab's CI_NODE_INDEX/CI_NODE_TOTAL, Buildkite's, CircleCI's), "+
		"each shard computing the same split; 'locklab merge' folds the shards' folders into one (docs/ci.md)")}
}

// spec returns the shard asked for (ok false: none), or an exit code >= 0.
func (f shardFlag) spec(cmd string, stderr io.Writer) (s shard.Spec, ok bool, code int) {
	var err error
	switch *f.s {
	case "":
		return shard.Spec{}, false, -1
	case "ci":
		if s, ok, err = shard.FromEnv(os.Getenv); err == nil && !ok {
			var pairs []string
			for _, v := range shard.CIVariables {
				pairs = append(pairs, fmt.Sprintf("%s's %s/%s", v.System, v.Index, v.Total))
			}
			err = fmt.Errorf("ci: none of %s is set (elsewhere give --shard K/N)", strings.Join(pairs, ", "))
		}
	default:
		s, err = shard.Parse(*f.s)
	}
	if err != nil {
		fmt.Fprintf(stderr, "locklab %s: --shard %v\n", cmd, err)
		return shard.Spec{}, false, exitUsage
	}
	return s, true, -1
}

// caseCost is what the estimate printed at a matrix's start allows one
// case: its expected length and the overhead of a case, the servers'
// starts left out (every shard starts its own).
func caseCost(p runner.Plan, c runner.Case) time.Duration {
	one := runner.Plan{Cases: []runner.Case{c}, EndWhenAnswered: p.EndWhenAnswered}
	return runner.Estimate(one, false, 0, runner.CaseOverhead, func([]runner.Case) time.Duration { return 0 })
}

// shardItems are p's cases as items to split, each at its cost, grouped
// by the servers they run on and the kinds of their faults (which decide
// whether a case has its servers to itself).
func shardItems(p runner.Plan) []shard.Item {
	items := make([]shard.Item, len(p.Cases))
	for i, c := range p.Cases {
		group := fmt.Sprintf("%s %+v", c.Approach.Server, c.ServerOptions())
		for _, st := range c.Faults {
			group += " " + st.Fault.Kind()
		}
		items[i] = shard.Item{Key: c.Name, Cost: caseCost(p, c), Group: group}
	}
	return items
}

// planHash is the identity of a whole plan: a hash of its kind and its
// cases as they run (approach, workload and seed, faults and their
// schedule, servers, expectation). Where results go and how many cases run
// at once are not part of it.
func planHash(p runner.Plan) (string, error) {
	type step struct {
		Kind string
		Step chaos.Step
	}
	type caseID struct {
		Name, Approach  string
		Workload        workload.Spec
		Faults          []step
		Servers         runner.ServerOptions
		Direct, Record  bool
		Processes, Ends bool
		Expect          verdict.Expectation
		Round           int
	}
	cases := make([]caseID, len(p.Cases))
	for i, c := range p.Cases {
		id := caseID{Name: c.Name, Approach: c.Approach.Name, Workload: c.Workload, Servers: c.Servers, Direct: c.Direct,
			Record: c.Record, Processes: c.Processes, Ends: c.EndWhenAnswered, Expect: c.Expect, Round: c.Round}
		for _, st := range c.Faults {
			id.Faults = append(id.Faults, step{Kind: st.Fault.Kind(), Step: st})
		}
		cases[i] = id
	}
	b, err := json.Marshal(struct {
		Kind            string
		EndWhenAnswered bool
		Cases           []caseID
	}{p.Kind, p.EndWhenAnswered, cases})
	if err != nil {
		return "", fmt.Errorf("the plan's identity: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12]), nil
}

// takeShard narrows p to shard s of its cases and returns the record
// shard.json keeps (its Version and Command are the caller's to set).
func takeShard(p *runner.Plan, kind string, s shard.Spec) (*shardRecord, error) {
	hash, err := planHash(*p)
	if err != nil {
		return nil, err
	}
	mine, err := shard.Pick(shardItems(*p), s)
	if err != nil {
		return nil, err
	}
	rec := &shardRecord{Kind: kind, Title: p.Kind, Plan: hash, K: s.K, N: s.N, PlanCases: len(p.Cases), Repeats: p.Repeats}
	cases := make([]runner.Case, len(mine))
	for j, i := range mine {
		cases[j] = p.Cases[i]
		rec.Cases = append(rec.Cases, p.Cases[i].Name)
		rec.At = append(rec.At, i)
	}
	p.Cases = cases
	if m, ok := p.Config.(map[string]any); ok {
		m["shard"] = map[string]any{"shard": s.String(), "plan": hash}
	}
	return rec, nil
}

// write saves the record into a results folder, with the locklab version
// results.json names.
func (r *shardRecord) write(dir string, res *report.Results) error {
	if res != nil {
		r.Version = res.Versions["locklab"]
	}
	return report.WriteJSON(filepath.Join(dir, shardFileName), r)
}

// finish writes the record into a shard's results folder and says that
// the verdict is the merge's: a cell's or an approach's runs may fall to
// several shards, and only all of them decide it. It returns the shard's
// exit code: 0 once its share ran.
func (r *shardRecord) finish(dir string, res *report.Results, stderr io.Writer) int {
	if err := r.write(dir, res); err != nil {
		fmt.Fprintf(stderr, "locklab %s: %v\n", r.Kind, err)
		return exitInfra
	}
	r.leaveVerdict(stderr)
	return exitOK
}

func (r *shardRecord) leaveVerdict(stderr io.Writer) {
	fmt.Fprintf(stderr, "locklab %s: shard %d/%d of plan %s written; 'locklab merge' of the %d shards' folders gives the verdict\n",
		r.Kind, r.K, r.N, r.Plan, r.N)
}
