package cluster

import (
	"testing"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/internal/errtest"
)

func TestUpOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		servers []impls.Server
		wantErr string
	}{
		{"the defaults", DefaultServers(), ""},
		{"none", nil, ""},
		{"one on request", []impls.Server{"redis-sentinel"}, ""},
		{"an unknown kind", []impls.Server{"redis", "cassandra"}, `unknown server kind "cassandra" (known: `},
		{"an empty name", []impls.Server{""}, `unknown server kind ""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errtest.Want(t, UpOptions{Servers: tc.servers}.Validate(), tc.wantErr)
		})
	}
}

func TestDefaultServersLeaveOutOnRequest(t *testing.T) {
	def := DefaultServers()
	for _, k := range Kinds() {
		in := false
		for _, s := range def {
			in = in || s == k.Server
		}
		if in == k.OnRequest {
			t.Errorf("%s: in the defaults %v, started on request %v", k.Server, in, k.OnRequest)
		}
	}
}
