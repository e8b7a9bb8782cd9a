package matrix

import (
	"github.com/locklab/locklab/checker"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/all"
	"github.com/locklab/locklab/verdict"
)

func TestShippedMatrixIsValidAndComplete(t *testing.T) {
	reg := all.Registry()
	m, err := Load(Shipped, reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Faults) < 6 {
		t.Fatalf("%d faults", len(m.Faults))
	}
	for _, f := range m.Faults {
		for _, a := range reg.All() {
			c := m.Cell(a, f.Name)
			if !c.Applies {
				continue
			}
			if c.Source == "" || c.Why == "" || len(c.Expect.Outcomes)+len(c.Expect.Forbidden) == 0 {
				t.Errorf("%s under %s: incomplete cell %+v", a.Name, f.Name, c)
			}
		}
	}
	tests := []struct {
		approach, fault string
		want            []verdict.Outcome
	}{
		{"redis-setnx-px-lua", "client-pause", []verdict.Outcome{verdict.DoubleGrantOutlived, verdict.LostUpdate}},
		{"redis-setnx-px-del", "client-pause", []verdict.Outcome{verdict.DoubleGrantOutlived, verdict.LostUpdate}},
		{"etcd-lease", "client-pause", []verdict.Outcome{verdict.DoubleGrantOutlived, verdict.LostUpdate}},
		{"mysql-for-update", "client-pause", []verdict.Outcome{verdict.Safe}},
		{"mysql-insert-delete", "client-pause", []verdict.Outcome{verdict.Safe}},
		{"redis-setnx", "holder-crash", []verdict.Outcome{verdict.Safe, verdict.Blocked}},
		{"zk-sequential", "holder-crash", []verdict.Outcome{verdict.Safe}},
		{"redis-get-set", "none", []verdict.Outcome{verdict.DoubleGrantBothValid}},
		{"pg-advisory", "none", []verdict.Outcome{verdict.Safe}},
		{"redis-get-set", "client-pause", []verdict.Outcome{verdict.DoubleGrant}},
	}
	for _, tt := range tests {
		a, _ := reg.Get(tt.approach)
		c := m.Cell(a, tt.fault)
		if !c.Applies || !sameOutcomes(c.Expect.Outcomes, tt.want) {
			t.Errorf("%s under %s: %+v, want %v", tt.approach, tt.fault, c.Expect, tt.want)
		}
	}
	// The plain DEL's third grant is predicted, not required: the DEL may
	// land between two holds.
	a, _ := reg.Get("redis-setnx-px-del")
	if c := m.Cell(a, "client-pause"); !sameOutcomes(c.Expect.May, []verdict.Outcome{verdict.DoubleGrantBothValid}) {
		t.Errorf("redis-setnx-px-del under client-pause may show %v, want double-grant:both-valid", c.Expect.May)
	}
}

func sameOutcomes(a, b []verdict.Outcome) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestMatrixValidation(t *testing.T) {
	scenario := "name: f\napproaches: [redis-setnx-px-lua, redis-setnx]\nduration: 2s\n"
	good := "faults:\n  f: a fault\ncells:\n  f:\n    - {match: \"*\", expect: [safe], why: w, source: s}\n"
	tests := []struct {
		name, expectations, scenario, want string
	}{
		{"good", good, scenario, ""},
		{"unknown key", "faults:\n  f: x\ncellz: {}\n", scenario, "field cellz not found"},
		{"fault without scenario", "faults:\n  g: x\ncells: {}\n", scenario, "fault g"},
		{"cells of unknown fault", "faults:\n  f: x\ncells:\n  g:\n    - {match: \"*\", expect: [safe], why: w, source: s}\n", scenario, `unknown fault "g"`},
		{"no source", "faults:\n  f: x\ncells:\n  f:\n    - {match: \"*\", expect: [safe], why: w}\n", scenario, "source:"},
		{"no why", "faults:\n  f: x\ncells:\n  f:\n    - {match: \"*\", expect: [safe], source: s}\n", scenario, "why:"},
		{"unknown outcome", "faults:\n  f: x\ncells:\n  f:\n    - {match: \"*\", expect: [doom], why: w, source: s}\n", scenario, `unknown outcome "doom"`},
		{"unknown capability", "faults:\n  f: x\ncells:\n  f:\n    - {match: \"cap:magic\", expect: [safe], why: w, source: s}\n", scenario, `unknown capability "cap:magic"`},
		{"unknown approach", "faults:\n  f: x\ncells:\n  f:\n    - {match: nope, expect: [safe], why: w, source: s}\n", scenario, `unknown approach "nope"`},
		{"approach without a cell", "faults:\n  f: x\ncells:\n  f:\n    - {match: weak:no-expiry, expect: [safe], why: w, source: s}\n", scenario, "no expectation for redis-setnx-px-lua under f"},
		{"scenario states its own expectation", good, scenario + "expect: {redis-setnx: [safe]}\n", "belong in expectations.yaml"},
		{"bad scenario", good, "name: f\napproaches: [nope]\nduration: 2s\n", "matrix faults/f.yaml"},
		{"mechanisms", good + "mechanisms:\n  - {match: redis-setnx, shows: [released-over-another], why: w, source: s}\n", scenario, ""},
		{"unknown mechanism", good + "mechanisms:\n  - {match: redis-setnx, shows: [teleported], why: w, source: s}\n", scenario, `unknown mechanism "teleported"`},
		{"mechanism of an unknown approach", good + "mechanisms:\n  - {match: nope, shows: [released-over-another], why: w, source: s}\n", scenario, `unknown approach "nope"`},
		{"mechanism without a source", good + "mechanisms:\n  - {match: redis-setnx, shows: [released-over-another], why: w}\n", scenario, "source:"},
		{"mechanism showing nothing", good + "mechanisms:\n  - {match: redis-setnx, why: w, source: s}\n", scenario, "shows:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"expectations.yaml": {Data: []byte(tt.expectations)},
				"faults/f.yaml":     {Data: []byte(tt.scenario)},
			}
			_, err := Load(fsys, all.Registry())
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestMostSpecificRuleWins(t *testing.T) {
	exp := "faults:\n  f: x\ncells:\n  f:\n" +
		"    - {match: \"*\", expect: [safe], why: any, source: s}\n" +
		"    - {match: cap:ttl, expect: [double-grant:outlived], why: ttl, source: s}\n" +
		"    - {match: weak:no-expiry, expect: [blocked], why: noexp, source: s}\n" +
		"    - {match: redis-setnx-px-del, expect: [lost-update], why: named, source: s}\n"
	sc := "name: f\napproaches: [redis-setnx-px-lua, redis-setnx, redis-setnx-px-del, zk-sequential]\nduration: 2s\n"
	reg := all.Registry()
	m, err := Load(fstest.MapFS{"expectations.yaml": {Data: []byte(exp)}, "faults/f.yaml": {Data: []byte(sc)}}, reg)
	if err != nil {
		t.Fatal(err)
	}
	for approach, want := range map[string]string{"redis-setnx-px-lua": "ttl", "redis-setnx": "noexp", "redis-setnx-px-del": "named", "zk-sequential": "any"} {
		a, _ := reg.Get(approach)
		if c := m.Cell(a, "f"); c.Why != want {
			t.Errorf("%s: rule %q matched, want %q", approach, c.Why, want)
		}
	}
	a, _ := reg.Get("pg-advisory")
	if c := m.Cell(a, "f"); c.Applies {
		t.Error("a cell whose approach the fault's scenario does not run must be n/a")
	}
}

// Every mechanisms entry that matches an approach counts: the shipped
// matrix gives the plain-DEL releases theirs, the approaches declared unsafe
// every one, and the correct Redis lock none.
func TestShippedMechanisms(t *testing.T) {
	reg := all.Registry()
	m, err := Load(Shipped, reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		approach, mechanism string
		want                bool
	}{
		{"redis-setnx-px-del", checker.ReleasedOverAnother, true},
		{"redis-setnx-px-getdel", checker.ReleasedOverAnother, true},
		{"redis-setnx-px-del", checker.RenewedOverAnother, false},
		{"redis-setnx-px-lua", checker.ReleasedOverAnother, false},
		{"redis-setnx-px-lua", checker.RenewedOverAnother, false},
		{"redis-get-set", checker.RenewedOverAnother, true},
	} {
		a, err := reg.Get(tc.approach)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Shows(a, tc.mechanism); got != tc.want {
			t.Errorf("%s shows %s: %v, want %v", tc.approach, tc.mechanism, got, tc.want)
		}
	}
}

// The replicated MariaDB approaches run in their own column, db-failover,
// but every column has a rule that speaks for them (explore and approach
// files are judged by the rules a capability or weakness matches), and the
// column's cells say what asynchronous and semi-synchronous replication
// each lose.
func TestReplicatedMariaDBCells(t *testing.T) {
	reg := all.Registry()
	m, err := Load(Shipped, reg)
	if err != nil {
		t.Fatal(err)
	}
	var replicated []string
	for _, a := range reg.All() {
		if a.Server == impls.MySQLReplicated || a.Server == impls.MySQLSemiSync {
			replicated = append(replicated, a.Name)
			for _, f := range m.Faults {
				if _, ok := m.RuleFor(f.Name, a); !ok {
					t.Errorf("no rule of %s speaks for %s", f.Name, a.Name)
				}
			}
		}
	}
	if len(replicated) != 6 {
		t.Fatalf("replicated MariaDB approaches: %v, want 6", replicated)
	}
	for name, want := range map[string][]verdict.Outcome{
		"mysql-sharded-replicated":       {verdict.DoubleGrantBothValid},
		"mysql-sharded-semisync":         {verdict.Safe},
		"mysql-for-update-semisync":      {verdict.DoubleGrantBothValid},
		"mysql-insert-delete-replicated": {verdict.Blocked},
	} {
		a, _ := reg.Get(name)
		c := m.Cell(a, "db-failover")
		if !c.Applies || !sameOutcomes(c.Expect.Outcomes, want) {
			t.Errorf("%s under db-failover: %+v, want %v", name, c, want)
		}
		if c := m.Cell(a, "none"); c.Applies {
			t.Errorf("%s applies under none; the replicated topologies have a column of their own", name)
		}
	}
}
