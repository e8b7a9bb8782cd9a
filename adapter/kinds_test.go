package adapter

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
)

// An approach file may name any server kind: its adapter must be handed
// that kind's servers, each of them unless the file asks for fewer, and a
// built-in approach served through the protocol (Serve) must read back
// what an in-process client of it is given.
func TestEveryKindHandsItsServers(t *testing.T) {
	for _, k := range cluster.Kinds() {
		t.Run(string(k.Server), func(t *testing.T) {
			addrs := []string{"127.0.0.1:40101", "127.0.0.1:40102", "127.0.0.1:40103"}
			ep, err := cluster.PlannedEndpoints(k.Server, addrs)
			if err != nil {
				t.Fatal(err)
			}
			for _, nodes := range []int{0, 1} {
				h := helloFor(&Spec{Name: "x", Server: k.Server, Nodes: nodes}, impls.Env{Endpoints: ep, ClientID: 1})
				want := ep[k.Server].First(nodes)
				if got := h.Servers[string(k.Server)]; len(got) == 0 || !reflect.DeepEqual(got, want.Addrs) {
					t.Errorf("nodes %d: handed %v of %s, want %v", nodes, got, k.Server, want.Addrs)
				}
				b, err := json.Marshal(h)
				if err != nil {
					t.Fatal(err)
				}
				var sent Hello
				if err := json.Unmarshal(b, &sent); err != nil {
					t.Fatal(err)
				}
				if got := endpointsOf(sent)[k.Server]; !reflect.DeepEqual(got, want) {
					t.Errorf("nodes %d: served %s as %s, want %s", nodes, k.Server, show(got), show(want))
				}
			}
		})
	}
}

func show(s impls.Servers) string {
	b, _ := json.Marshal(s)
	return string(b)
}
