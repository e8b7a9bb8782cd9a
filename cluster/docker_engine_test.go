package cluster

import (
	"context"
	"strings"
	"testing"

	"github.com/locklab/locklab/impls"
)

// An engine reached through a Unix socket is this machine's; any other is
// taken to be another machine's: its ports are reached at its host, an
// engine on a host other than loopback needs --allow-remote, and the
// Sentinels (this machine's network and files) cannot run on it.
func TestDockerEngineWhere(t *testing.T) {
	tests := []struct {
		url            string
		remote, nearby bool // nearby: its ports are on this machine's loopback
		host           string
	}{
		{"unix:///var/run/docker.sock", false, true, "127.0.0.1"},
		{"tcp://127.0.0.1:23750", true, true, "127.0.0.1"},
		{"tcp://localhost:23750", true, true, "127.0.0.1"},
		{"tcp://10.0.0.5:2376", true, false, "10.0.0.5"},
		{"tcp://[fd00::5]:2376", true, false, "fd00::5"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			e, err := parseEngine(context.Background(), tt.url)
			if err != nil {
				t.Fatal(err)
			}
			if e.Remote != tt.remote || e.OnAnotherHost() == tt.nearby || e.Host != tt.host {
				t.Fatalf("%+v: want remote %v, on another host %v, host %s", e, tt.remote, !tt.nearby, tt.host)
			}
			if got := e.addr(16379); !strings.HasSuffix(got, ":16379") || !strings.Contains(got, tt.host) {
				t.Errorf("addr = %s, want %s's port 16379", got, tt.host)
			}
			err = e.Allowed(false)
			if tt.nearby != (err == nil) {
				t.Errorf("Allowed(false) = %v", err)
			}
			if err != nil && !strings.Contains(err.Error(), "only with --allow-remote") {
				t.Errorf("the refusal does not name the flag: %v", err)
			}
			if err := e.Allowed(true); err != nil {
				t.Errorf("Allowed(true) = %v", err)
			}
			err = e.check(ForServers(impls.Redis, impls.RedisSentinel), true)
			if tt.remote != (err != nil) || err != nil && !strings.Contains(err.Error(), "redis-sentinel runs on the engine's host network") {
				t.Errorf("the Sentinels on %s: err = %v", tt.url, err)
			}
		})
	}
}

// DOCKER_HOST's host is known without contacting it: a refusal sends
// nothing there.
func TestEngineElsewhere(t *testing.T) {
	for raw, want := range map[string]string{
		"": "", "unix:///var/run/docker.sock": "", "tcp://127.0.0.1:2375": "", "tcp://localhost:2375": "",
		"tcp://10.0.0.5:2376": "10.0.0.5", "tcp://docker.lab.example:2376": "docker.lab.example", "ssh://me@db1": "db1",
	} {
		if got := EngineElsewhere(raw); got != want {
			t.Errorf("EngineElsewhere(%q) = %q, want %q", raw, got, want)
		}
	}
}
