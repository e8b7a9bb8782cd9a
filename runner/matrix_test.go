package runner

import (
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/impls/all"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/verdict"
)

// A Docker cluster runs every topology the embedded mode runs, the
// Sentinel one included: the same cells apply and the same cases are
// planned.
func TestMatrixPlanInDockerAsEmbedded(t *testing.T) {
	reg := all.Registry()
	m, err := matrix.Load(matrix.Shipped, reg)
	if err != nil {
		t.Fatal(err)
	}
	planned := map[bool][]string{}
	for _, docker := range []*Docker{nil, {}} {
		p, cells, err := MatrixPlan(reg, m, MatrixOptions{Approaches: []string{"redis-sentinel-lua", "redis-setnx-px-lua"},
			Faults: []string{"failover", "server-pause"}, Runs: 1, Docker: docker})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cells {
			if c.Fault == "failover" && c.Approach == "redis-sentinel-lua" && !c.Applies {
				t.Fatalf("docker %v: failover cell n/a (%s)", docker != nil, c.Why)
			}
		}
		for _, c := range p.Cases {
			planned[docker != nil] = append(planned[docker != nil], c.Name)
		}
	}
	if !slices.Equal(planned[false], planned[true]) || !slices.Contains(planned[true], "failover--redis-sentinel-lua--r1") {
		t.Errorf("embedded plans %q, docker %q: want the same, with the failover cell", planned[false], planned[true])
	}
}

// --cells unsafe plans only the cells that expect a violation; the others
// stay in the table, marked as left out, not as n/a; --cells safe is the
// complement.
func TestMatrixPlanCellsChoice(t *testing.T) {
	reg := all.Registry()
	m, err := matrix.Load(matrix.Shipped, reg)
	if err != nil {
		t.Fatal(err)
	}
	opt := MatrixOptions{Approaches: []string{"redis-setnx-px-lua", "zk-sequential"}, Faults: []string{"none", "client-pause"}, Runs: 2}
	planned := map[string]map[string]bool{}
	for _, which := range []string{"all", "unsafe", "safe"} {
		opt.Cells = which
		p, cells, err := MatrixPlan(reg, m, opt)
		if err != nil {
			t.Fatalf("--cells %s: %v", which, err)
		}
		planned[which] = map[string]bool{}
		for _, c := range p.Cases {
			planned[which][c.Name] = true
		}
		for _, c := range cells {
			wantRun := which == "all" || (which == "unsafe") == c.ExpectsViolation() || c.NotChosen
			if c.NotChosen && (which == "all" || (which == "unsafe") == c.ExpectsViolation()) {
				t.Errorf("--cells %s: %s under %s left out", which, c.Approach, c.Fault)
			}
			if !wantRun {
				t.Errorf("--cells %s: %s under %s (expects a violation: %v) chosen", which, c.Approach, c.Fault, c.ExpectsViolation())
			}
			if c.NotChosen && c.Applies {
				t.Errorf("--cells %s: %s under %s left out but still applies", which, c.Approach, c.Fault)
			}
		}
	}
	// Under client-pause both expect a violation, under none neither does.
	for _, name := range []string{"client-pause--redis-setnx-px-lua--r1", "client-pause--zk-sequential--r2"} {
		if !planned["unsafe"][name] || planned["safe"][name] {
			t.Errorf("%s: in unsafe %v, in safe %v; want only in unsafe", name, planned["unsafe"][name], planned["safe"][name])
		}
	}
	if got, want := len(planned["unsafe"])+len(planned["safe"]), len(planned["all"]); got != want || want != 8 {
		t.Errorf("unsafe + safe = %d cases, all = %d, want 8 = 8", got, want)
	}
	for _, bad := range []MatrixOptions{{Runs: 1, Cells: "risky"}, {Runs: 1, MinCatchRate: 1.5}} {
		if _, _, err := MatrixPlan(reg, m, bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// A cell expecting a violation that showed it in 1 of 2 runs agrees with
// no minimum catch rate and contradicts with 0.95; a safe cell is not
// touched by the minimum.
func TestMatrixResultsMinCatchRate(t *testing.T) {
	reg := all.Registry()
	m, err := matrix.Load(matrix.Shipped, reg)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := reg.Get("redis-setnx-px-lua")
	cells := []matrix.Cell{m.Cell(a, "client-pause"), m.Cell(a, "none")}
	if !cells[0].ExpectsViolation() || cells[1].ExpectsViolation() {
		t.Fatalf("the shipped matrix changed: client-pause expects %v, none %v", cells[0].Expect, cells[1].Expect)
	}
	runs := []report.Run{
		{Case: CellCaseName("client-pause", a.Name, 1), Status: verdict.Agrees, FirstViolationAt: 1.5, Model: checker.ModelLease,
			LockLoss: &report.LockLoss{Told: 1, Samples: []float64{0.5}}},
		{Case: CellCaseName("client-pause", a.Name, 2), Status: verdict.Contradicts, Missed: true, Missing: []string{"double-grant:outlived"},
			Model: checker.ModelLease, LockLoss: &report.LockLoss{NotTold: 1}},
		{Case: CellCaseName("none", a.Name, 1), Status: verdict.Agrees},
		{Case: CellCaseName("none", a.Name, 2), Status: verdict.Agrees},
	}
	for _, tc := range []struct {
		min  float64
		want int // contradicted cells
	}{{0, 0}, {0.5, 0}, {0.95, 1}} {
		mat := MatrixResults(cells, runs, MatrixOptions{Runs: 2, MinCatchRate: tc.min})
		bad, _ := MatrixExit(mat)
		if len(bad) != tc.want {
			t.Errorf("min catch rate %v: contradicted %q, want %d cell(s)", tc.min, bad, tc.want)
		}
		if tc.want == 1 && !strings.Contains(bad[0], "caught in 1 of 2 runs") {
			t.Errorf("min catch rate %v: %q does not say how often it was caught", tc.min, bad[0])
		}
		// The cell's lock losses are its runs' together; the matrix names the model.
		if c, _ := mat.Cell(a.Name, "client-pause"); mat.Model != checker.ModelLease || c.LockLoss == nil ||
			c.LockLoss.Told != 1 || c.LockLoss.NotTold != 1 || c.LockLoss.Median != 0.5 {
			t.Errorf("matrix model %q, cell lock loss %+v", mat.Model, c.LockLoss)
		}
		if c, _ := mat.Cell(a.Name, "none"); c.LockLoss != nil {
			t.Errorf("a cell with no loss: %+v", c.LockLoss)
		}
	}
}

// A cell whose runs could not decide is undecided, and says why in each
// run's words: never caught nor missed, never clean.
func TestMatrixResultsUndecidedSaysWhy(t *testing.T) {
	reg := all.Registry()
	m, err := matrix.Load(matrix.Shipped, reg)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := reg.Get("redis-setnx-px-lua")
	cells := []matrix.Cell{m.Cell(a, "client-pause")}
	for _, tc := range []struct {
		name       string
		run        report.Run
		labStalled int
		mark       string // in matrix.md's table
	}{
		{"lab stalled", report.Run{LabStalled: true,
			Explanation: "inconclusive: the lab stalled (locklab for 1.50 s at 2.00 s) during the events that decide it; expected double-grant:outlived + lost-update, observed double-grant:outlived"},
			1, "1 run(s) inconclusive: the lab stalled"},
		{"fault not taken", report.Run{
			Explanation: "inconclusive: the fault never took effect (0: each of 3 holders let go before its pause landed); expected double-grant:outlived + lost-update, never observed double-grant:outlived"},
			0, "UNDECIDED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := tc.run
			run.Case, run.Status = CellCaseName("client-pause", a.Name, 1), verdict.Undecided
			mat := MatrixResults(cells, []report.Run{run}, MatrixOptions{Runs: 1})
			c, _ := mat.Cell(a.Name, "client-pause")
			if c.Status != verdict.Undecided || c.LabStalled != tc.labStalled || c.Caught != 0 {
				t.Fatalf("cell %+v: want undecided, %d run(s) the lab stalled in", c, tc.labStalled)
			}
			if _, undecided := MatrixExit(mat); len(undecided) != 1 {
				t.Errorf("undecided cells %v, want this one", undecided)
			}
			md := string(report.MatrixMarkdown(mat))
			if !strings.Contains(md, tc.mark) || !strings.Contains(md, "  - "+run.Case+": "+run.Explanation) {
				t.Errorf("matrix.md does not say %q nor give the run's explanation:\n%s", tc.mark, md)
			}
		})
	}
}

// An interrupted case that had not shown its expected violation yet is
// undecided, not a miss; an unexpected violation it showed still stands.
func TestCutShort(t *testing.T) {
	missed := verdict.Compare(verdict.Expect("test", verdict.DoubleGrantBothValid), verdict.Observed{Checked: true})
	if !missed.Missed {
		t.Fatalf("setup: %+v is not a miss", missed)
	}
	if got := cutShort(missed); got.Status != verdict.Undecided || got.Missed || !strings.Contains(got.Text, "cut short") {
		t.Errorf("cut short miss = %+v, want undecided", got)
	}
	unsafe := verdict.Compare(verdict.Expect("test", verdict.Safe),
		verdict.Observed{Checked: true, Counts: map[verdict.Outcome]int{verdict.DoubleGrantBothValid: 1}})
	if got := cutShort(unsafe); got.Status != verdict.Contradicts {
		t.Errorf("cut short unexpected violation = %+v, want it to stand", got)
	}
}

// A cell whose run showed a violation nothing predicts contradicts, and its
// explanations carry that run's deciding incidents.
func TestMatrixResultsNameTheDeciding(t *testing.T) {
	reg := all.Registry()
	m, err := matrix.Load(matrix.Shipped, reg)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := reg.Get("redis-setnx-px-lua")
	cells := []matrix.Cell{m.Cell(a, "client-pause")}
	runs := []report.Run{{Case: CellCaseName("client-pause", a.Name, 1), Status: verdict.Contradicts,
		Explanation: "expected double-grant:outlived + lost-update, observed double-grant:both-valid, which nothing predicts",
		Deciding:    []string{"double-grant:both-valid: client 3 held, client 1 granted, at 5.20 s"}}}
	mat := MatrixResults(cells, runs, MatrixOptions{Runs: 1})
	if bad, _ := MatrixExit(mat); len(bad) != 1 {
		t.Fatalf("contradicted %q, want the cell", bad)
	}
	c, _ := mat.Cell(a.Name, "client-pause")
	if len(c.Explanations) != 2 || !strings.Contains(c.Explanations[1], "decided by double-grant:both-valid: client 3 held") {
		t.Errorf("explanations %q", c.Explanations)
	}
}
