package runner

import (
	"slices"
	"testing"

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
