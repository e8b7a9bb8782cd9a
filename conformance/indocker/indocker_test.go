package indocker

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/docker"
	"github.com/locklab/locklab/conformance"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/all"
)

var testCluster *cluster.Cluster

// TestMain starts every server kind, the Sentinel and replicated MariaDB topologies included, as
// containers from the local images.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	cfg := cluster.ForServers(impls.Redis, impls.MySQL, impls.ZooKeeper, impls.Postgres, impls.Etcd, impls.RedisSentinel,
		impls.MySQLReplicated, impls.MySQLSemiSync)
	cfg.StartTimeout = 3 * time.Minute
	c, err := cluster.StartDocker(context.Background(), cluster.DockerConfig{LocalConfig: cfg, Images: cluster.LocalImages(), Connect: docker.Connect})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the Docker cluster (images from scripts/images.sh):", err)
		return 1
	}
	defer c.Close()
	testCluster = c
	return m.Run()
}

// approachesEnv names the approaches to run here: "all", or a comma-separated
// list; unset, the topologies' covers (see covering).
const approachesEnv = "LOCKLAB_INDOCKER_APPROACHES"

// The approaches pass the suite in containers.
func TestConformance(t *testing.T) {
	chosen, err := chosenApproaches(all.Registry().All(), os.Getenv(approachesEnv))
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(chosen))
	for i, a := range chosen {
		names[i] = a.Name
	}
	t.Logf("%d approaches (%s=all runs every one): %s", len(chosen), approachesEnv, strings.Join(names, ", "))
	conformance.RunRegistered(t, testCluster, func(r *impls.Registry) {
		for _, a := range chosen {
			r.Register(a)
		}
	})
}

func chosenApproaches(registered []impls.Approach, env string) ([]impls.Approach, error) {
	switch env {
	case "":
		return covering(registered), nil
	case "all":
		return registered, nil
	}
	byName := map[string]impls.Approach{}
	for _, a := range registered {
		byName[a.Name] = a
	}
	var out []impls.Approach
	for _, n := range strings.Split(env, ",") {
		a, ok := byName[strings.TrimSpace(n)]
		if !ok {
			return nil, fmt.Errorf("%s: no approach %q", approachesEnv, n)
		}
		out = append(out, a)
	}
	return out, nil
}

// covering picks, for each topology (a server kind, and whether a client
// uses one of its nodes or all), the fewest approaches that together
// declare every capability any approach of that topology declares. Each
// approach runs the suite against the embedded servers in its own
// package; what containers add is the way faults reach a server (a
// container killed, started, cut from its network) and the timing of
// servers that share the engine, which a test of each capability on each
// topology meets. Running all 32 here took 1,000 s of a CI run whose
// Docker engine then timed out starting containers.
func covering(registered []impls.Approach) []impls.Approach {
	type topology struct {
		server  impls.Server
		oneNode bool
	}
	var order []topology
	groups := map[topology][]impls.Approach{}
	for _, a := range registered {
		k := topology{a.Server, a.Nodes == 1}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], a)
	}
	var out []impls.Approach
	for _, k := range order {
		missing := map[string]bool{}
		for _, a := range groups[k] {
			for c := range capabilities(a) {
				missing[c] = true
			}
		}
		picked := false
		for !picked || len(missing) > 0 {
			best, bestGain := -1, -1
			for i, a := range groups[k] {
				gain := 0
				for c := range capabilities(a) {
					if missing[c] {
						gain++
					}
				}
				if gain > bestGain {
					best, bestGain = i, gain
				}
			}
			a := groups[k][best]
			for c := range capabilities(a) {
				delete(missing, c)
			}
			out = append(out, a)
			groups[k] = append(groups[k][:best:best], groups[k][best+1:]...)
			picked = true
		}
	}
	return out
}

// capabilities are the names of the capabilities a declares.
func capabilities(a impls.Approach) map[string]bool {
	out := map[string]bool{}
	v := reflect.ValueOf(a.Caps)
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).Kind() == reflect.Bool && v.Field(i).Bool() {
			out[v.Type().Field(i).Name] = true
		}
	}
	return out
}

// Every capability an approach declares on a topology is declared by one
// chosen for that topology, and fewer approaches run than are registered.
func TestCoveringKeepsEveryCapabilityOfEveryTopology(t *testing.T) {
	registered := all.Registry().All()
	chosen := covering(registered)
	type key struct {
		server  impls.Server
		oneNode bool
		cap     string
	}
	have := map[key]bool{}
	for _, a := range chosen {
		have[key{a.Server, a.Nodes == 1, ""}] = true
		for c := range capabilities(a) {
			have[key{a.Server, a.Nodes == 1, c}] = true
		}
	}
	for _, a := range registered {
		if !have[key{a.Server, a.Nodes == 1, ""}] {
			t.Errorf("%s: its topology (%s, one node %v) runs no approach", a.Name, a.Server, a.Nodes == 1)
		}
		for c := range capabilities(a) {
			if !have[key{a.Server, a.Nodes == 1, c}] {
				t.Errorf("%s: %s on %s is declared by no chosen approach", a.Name, c, a.Server)
			}
		}
	}
	if len(chosen) >= len(registered) {
		t.Errorf("%d of %d approaches chosen: no fewer", len(chosen), len(registered))
	}
	var names []string
	for _, a := range chosen {
		names = append(names, a.Name)
	}
	t.Logf("%d of %d: %s", len(chosen), len(registered), strings.Join(names, ", "))
	if _, err := chosenApproaches(registered, "redis-setnx-px-lua,nope"); err == nil {
		t.Error("an unknown approach in the list was taken")
	}
}
