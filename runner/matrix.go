package runner

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/verdict"
)

// MatrixOptions choose the part of the matrix to run.
type MatrixOptions struct {
	Approaches []string // rows; empty: every approach
	Faults     []string // columns; empty: every fault
	Runs       int      // runs per cell
	// Cells picks among the applicable cells: "" or "all", "unsafe" (those
	// that expect a violation: the catch-rate pass), "safe" (the others).
	Cells string
	// MinCatchRate: a cell that expects a violation and shows it in a
	// smaller share of its runs contradicts its expectation (0: one catch
	// is enough).
	MinCatchRate float64
	Seed         uint64
	ResultsDir   string
	External     *cluster.ExternalConfig // the user's servers
	Docker       *Docker                 // the servers run as containers
}

// Validate says whether opt chooses a part of the matrix: at least one
// run per cell, a known Cells and a catch rate that is a share. The
// approaches and faults are looked up by MatrixPlan.
func (opt MatrixOptions) Validate() error {
	if opt.Runs < 1 {
		return fmt.Errorf("--runs %d: want at least 1", opt.Runs)
	}
	switch opt.Cells {
	case "", "all", "unsafe", "safe":
	default:
		return fmt.Errorf("--cells %q: want all, unsafe (the cells that expect a violation) or safe", opt.Cells)
	}
	if opt.MinCatchRate < 0 || opt.MinCatchRate > 1 {
		return fmt.Errorf("--min-catch-rate %v: want a share between 0 and 1", opt.MinCatchRate)
	}
	return nil
}

// MatrixPlan makes a plan of every applicable cell of the matrix, Runs
// times each (each run with its own seed), grouped by fault so servers are
// started anew only when a fault's server options change. Cells that do
// not apply are returned as n/a, not run.
func MatrixPlan(reg *impls.Registry, m *matrix.Matrix, opt MatrixOptions) (Plan, []matrix.Cell, error) {
	if err := opt.Validate(); err != nil {
		return Plan{}, nil, usageErr(err)
	}
	approaches := reg.All()
	if len(opt.Approaches) > 0 {
		approaches = nil
		for _, name := range opt.Approaches {
			a, err := reg.Get(name)
			if err != nil {
				return Plan{}, nil, usageErr(err)
			}
			approaches = append(approaches, a)
		}
	}
	faults := m.FaultNames()
	if len(opt.Faults) > 0 {
		for _, f := range opt.Faults {
			if _, err := m.Fault(f); err != nil {
				return Plan{}, nil, usageErr(err)
			}
		}
		faults = opt.Faults
	}
	p := Plan{Kind: "matrix", ResultsDir: opt.ResultsDir, External: opt.External, Docker: opt.Docker, EndWhenAnswered: true, ShareServers: true,
		Config: map[string]any{"approaches": names(approaches), "faults": faults, "runs": opt.Runs, "seed": opt.Seed,
			"cluster": clusterMode(opt.External, opt.Docker), "images": opt.Docker.images()}}
	known := matrix.NewExpectations(m, reg)
	var cells []matrix.Cell
	for _, fname := range faults {
		f, _ := m.Fault(fname)
		s := f.Scenario
		for _, a := range approaches {
			cell := m.Cell(a, fname)
			if cell.Applies && !chosen(opt.Cells, cell) {
				cell.Applies, cell.NotChosen = false, true
			}
			cells = append(cells, cell)
			if !cell.Applies {
				continue
			}
			for run := 1; run <= opt.Runs; run++ {
				w := s.Workload
				c := Case{Name: CellCaseName(fname, a.Name, run), Approach: a, Record: true,
					Processes: s.Processes, Servers: ServerOptions{Settings: s.Servers.Settings},
					Workload: workloadSpec(w, s.Duration, opt.Seed+uint64(run)),
					Expect:   cell.Expect, Round: run}
				for _, ft := range s.Faults {
					c.Faults = append(c.Faults, ft.Step)
				}
				c.Direct = !needsProxies(c.Faults)
				c.Expect = predict(known, c)
				if err := c.Validate(); err != nil {
					return Plan{}, nil, usageErr(err)
				}
				if err := checkAvailable(c, placement{docker: opt.Docker != nil, ext: opt.External}); err != nil {
					return Plan{}, nil, usageErr(err)
				}
				p.Cases = append(p.Cases, c)
			}
		}
	}
	if len(p.Cases) == 0 {
		return Plan{}, nil, usageErr(fmt.Errorf("no cell of the chosen approaches, faults and --cells applies"))
	}
	return p, cells, nil
}

// chosen reports whether an applicable cell is among those --cells picks.
func chosen(which string, c matrix.Cell) bool {
	switch which {
	case "unsafe":
		return c.ExpectsViolation()
	case "safe":
		return !c.ExpectsViolation()
	}
	return true
}

// CellCaseName is the case name of run n of a cell: safe in file names.
func CellCaseName(fault, approach string, run int) string {
	return fmt.Sprintf("%s--%s--r%d", fault, approach, run)
}

func names(as []impls.Approach) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Name
	}
	return out
}

// MatrixResults folds the runs of a matrix plan into its cells: expected
// versus observed, how many runs agreed, and for a cell that expects a
// violation, how often it was caught and how soon after the fault.
func MatrixResults(cells []matrix.Cell, runs []report.Run, opt MatrixOptions) *report.Matrix {
	runsPerCell := opt.Runs
	m := &report.Matrix{Runs: runsPerCell, MinCatchRate: opt.MinCatchRate}
	byCase := map[string]report.Run{}
	for _, r := range runs {
		byCase[r.Case] = r
	}
	seenA, seenF := map[string]bool{}, map[string]bool{}
	for _, c := range cells {
		if !seenA[c.Approach] {
			seenA[c.Approach] = true
			m.Approaches = append(m.Approaches, c.Approach)
		}
		if !seenF[c.Fault] {
			seenF[c.Fault] = true
			m.Faults = append(m.Faults, c.Fault)
		}
		mc := report.MatrixCell{Approach: c.Approach, Fault: c.Fault, Applies: c.Applies, NotChosen: c.NotChosen, Why: c.Why, Source: c.Source,
			Expected: c.Expect.Names()} // none for an n/a cell
		if !c.Applies {
			m.Cells = append(m.Cells, mc)
			continue
		}
		tally := verdict.Tally{ExpectsViolation: c.ExpectsViolation()}
		observed := map[string]bool{}
		var losses []*report.LockLoss
		for run := 1; run <= runsPerCell; run++ {
			r, ok := byCase[CellCaseName(c.Fault, c.Approach, run)]
			if !ok {
				continue // not run (interrupted)
			}
			mc.Operations += r.Acquired
			losses = append(losses, r.LockLoss)
			m.Model = cmp.Or(m.Model, r.Model)
			for _, o := range r.Observed {
				observed[o] = true
			}
			tally.AddStatus(r.Status, r.Missed)
			switch r.Status {
			case verdict.Agrees:
				if tally.ExpectsViolation && r.FirstViolationAt >= 0 {
					mc.TimesToViolation = append(mc.TimesToViolation, r.FirstViolationAt)
				}
			case verdict.Contradicts:
				mc.Explanations = append(mc.Explanations, r.Case+": "+r.Explanation)
				for _, d := range r.Deciding {
					mc.Explanations = append(mc.Explanations, r.Case+": decided by "+d)
				}
			case verdict.Undecided:
				// Why each undecided run could not decide: a lab stall, a
				// fault that never took effect, no grant after it.
				mc.Explanations = append(mc.Explanations, r.Case+": "+r.Explanation)
			}
			if r.LabStalled {
				mc.LabStalled++
			}
			mc.RunCases = append(mc.RunCases, r.Case)
			page := timelinePage(r.Case)
			if !slices.Contains(r.Artifacts, page) {
				page = ""
			}
			mc.RunPages = append(mc.RunPages, page)
		}
		for o := range observed {
			mc.Observed = append(mc.Observed, o)
		}
		slices.Sort(mc.Observed)
		mc.LockLoss = report.MergeLockLoss(losses...)
		mc.Ran, mc.Agreed, mc.Contradicted, mc.Undecided = tally.Runs, tally.Agreed, tally.Contradicted, tally.Undecided
		mc.ExpectsViolation = tally.ExpectsViolation
		if mc.ExpectsViolation {
			mc.Caught = tally.Agreed
		}
		mc.Status = tally.Status(matrixPolicy(opt))
		m.Cells = append(m.Cells, mc)
	}
	return m
}

// matrixPolicy is the rule for a cell's runs: one run that agreed is
// enough unless a minimum catch rate asks for more of a cell that expects a
// violation; a violation not expected fails the cell, as everywhere.
func matrixPolicy(opt MatrixOptions) verdict.Policy {
	return verdict.Policy{Need: 1, MinCatchRate: opt.MinCatchRate}
}

// MatrixExit is the matrix's verdict for the CLI: contradicted cells, and
// undecided ones.
func MatrixExit(m *report.Matrix) (contradicted, undecided []string) {
	for _, c := range m.Cells {
		switch c.Status {
		case verdict.Contradicts:
			s := fmt.Sprintf("%s under %s (expected %s, observed %s", c.Approach, c.Fault,
				strings.Join(c.Expected, " + "), strings.Join(c.Observed, ", "))
			if c.ExpectsViolation && c.Contradicted == 0 {
				s += fmt.Sprintf("; caught in %d of %d runs", c.Caught, c.Ran)
			}
			contradicted = append(contradicted, s+")")
		case verdict.Undecided:
			undecided = append(undecided, c.Approach+" under "+c.Fault)
		}
	}
	return contradicted, undecided
}
