package scenario

import (
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/memlock"
)

// server:KIND names every approach of that kind, so a list written so
// takes in approaches added later; names and kinds mix, each approach once.
func TestApproachesByServer(t *testing.T) {
	reg := impls.NewRegistry()
	svc := memlock.NewService(1)
	for _, a := range []struct {
		name   string
		server impls.Server
	}{{"r-one", impls.Redis}, {"r-two", impls.Redis}, {"z-one", impls.ZooKeeper}, {"m-one", ""}} {
		ap := svc.Approach(a.name)
		ap.Server = a.server
		reg.Register(ap)
	}
	tests := []struct {
		name    string
		list    []string
		want    []string
		wantErr string
	}{
		{"names", []string{"z-one", "r-one"}, []string{"z-one", "r-one"}, ""},
		{"a kind", []string{"server:redis"}, []string{"r-one", "r-two"}, ""},
		{"kinds and names, each once", []string{"r-two", "server:redis", "server:zookeeper"}, []string{"r-two", "r-one", "z-one"}, ""},
		{"a kind with no approach", []string{"server:etcd"}, nil, `no approach runs on server "etcd" (servers: , redis, zookeeper)`},
		{"unknown name", []string{"nope"}, nil, `unknown approach "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := expandApproaches(tt.list, reg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}
