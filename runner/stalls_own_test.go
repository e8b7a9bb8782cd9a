package runner

import (
	"slices"
	"testing"

	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/verdict"
)

// A case counts the stalls of locklab, the containers and its own servers,
// not those of a server another lane's cases use.
func TestOwnStalls(t *testing.T) {
	lab := []verdict.Stall{{Who: "locklab"}, {Who: "containers"}, {Who: serverStallWho("redis-0")}, {Who: serverStallWho("redis-5")}}
	for _, tt := range []struct {
		name string
		mine []string
		want []string
	}{
		{"its own server", []string{"redis-0"}, []string{"locklab", "containers", "server redis-0"}},
		{"another lane's", []string{"redis-1"}, []string{"locklab", "containers"}},
		{"no servers", nil, []string{"locklab", "containers"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mine := map[string]bool{}
			for _, n := range tt.mine {
				mine[serverStallWho(n)] = true
			}
			var got []string
			for _, s := range ownStalls(lab, mine) {
				got = append(got, s.Who)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("ownStalls = %v, want %v", got, tt.want)
			}
		})
	}
}

// A server's waits that began while a fault restarted that server are the
// restart's; the same server's waits outside it, another server's inside
// it, and any wait inside a fault that restarts nothing still count.
func TestNotRestarting(t *testing.T) {
	pg0 := serverStallWho("postgres-0")
	restart := report.Window{Label: "server-restart", Target: "postgres-0", Start: 100, End: 400}
	for _, tt := range []struct {
		name    string
		windows []report.Window
		stall   verdict.Stall
		counts  bool
	}{
		{"inside its restart", []report.Window{restart}, verdict.Stall{Who: pg0, Span: verdict.Span{Start: 150, End: 600}}, false},
		{"at its restart's end", []report.Window{restart}, verdict.Stall{Who: pg0, Span: verdict.Span{Start: 400, End: 500}}, false},
		{"inside its kill", []report.Window{{Label: "server-kill", Target: "postgres-0", Start: 100, End: 400}}, verdict.Stall{Who: pg0, Span: verdict.Span{Start: 200, End: 300}}, false},
		{"before its restart", []report.Window{restart}, verdict.Stall{Who: pg0, Span: verdict.Span{Start: 50, End: 200}}, true},
		{"after its restart", []report.Window{restart}, verdict.Stall{Who: pg0, Span: verdict.Span{Start: 401, End: 500}}, true},
		{"another server's", []report.Window{restart}, verdict.Stall{Who: serverStallWho("postgres-1"), Span: verdict.Span{Start: 150, End: 300}}, true},
		{"locklab's", []report.Window{restart}, verdict.Stall{Who: "locklab", Proc: -1, Span: verdict.Span{Start: 150, End: 300}}, true},
		{"inside a pause", []report.Window{{Label: "server-pause", Target: "postgres-0", Start: 100, End: 400}}, verdict.Stall{Who: pg0, Span: verdict.Span{Start: 150, End: 300}}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := len(notRestarting([]verdict.Stall{tt.stall}, tt.windows)) == 1
			if got != tt.counts {
				t.Errorf("counts = %v, want %v", got, tt.counts)
			}
		})
	}
}
