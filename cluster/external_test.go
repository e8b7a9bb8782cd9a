package cluster

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/locklab/locklab/impls"
)

func TestParseExternalConfigAllServerKinds(t *testing.T) {
	tests := []struct {
		name, yaml, wantErr string
		has                 []impls.Server
	}{
		{"postgres and etcd", "postgres: postgres://postgres@127.0.0.1:5432/locklab?sslmode=disable\netcd: [127.0.0.1:2379, 127.0.0.1:2380]\n", "",
			[]impls.Server{impls.Postgres, impls.Etcd}},
		{"postgres default port", "postgres: postgres://u:pw@localhost/db\n", "", []impls.Server{impls.Postgres}},
		{"postgres not a URL", "postgres: 'host=127.0.0.1 port=5432'\n", "want a URL", nil},
		{"postgres remote", "postgres: postgres://u@10.1.2.3:5432/db\n", "only with --allow-remote", nil},
		{"etcd remote", "etcd: [192.168.1.2:2379]\n", "only with --allow-remote", nil},
		{"port out of range", "redis: [127.0.0.1:99999]\n", "is not a port", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg ExternalConfig
			if !parseAs(t, tt.yaml, &cfg, tt.wantErr) {
				return
			}
			for _, b := range []impls.Server{impls.Redis, impls.MySQL, impls.ZooKeeper, impls.Postgres, impls.Etcd} {
				want := false
				for _, h := range tt.has {
					want = want || h == b
				}
				if cfg.Has(b) != want {
					t.Errorf("Has(%s) = %v, want %v", b, cfg.Has(b), want)
				}
			}
		})
	}
}

func TestLoadExternalConfigIsBounded(t *testing.T) {
	if _, err := LoadExternalConfig(context.Background(), "/dev/zero", false); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("err = %v, want the size bound named", err)
	}
}

// An external PostgreSQL and etcd (here: locklab's own, addressed as a user
// would address theirs) are reached through the proxies, with the user's
// PostgreSQL URL pointed at the proxy.
func TestConnectExternalPostgresAndEtcd(t *testing.T) {
	ctx := context.Background()
	local, err := StartLocal(ctx, ForServers(impls.Postgres, impls.Etcd))
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	cfg := ExternalConfig{Servers: map[impls.Server][]string{
		impls.Postgres: {fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", local.NodesOf(impls.Postgres)[0].DirectAddr(), PostgresDatabase)}}}
	for _, n := range local.NodesOf(impls.Etcd) {
		cfg.Servers[impls.Etcd] = append(cfg.Servers[impls.Etcd], n.DirectAddr())
	}
	ext, err := ConnectExternal(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Close()
	ep := ext.Endpoints()
	if len(ep[impls.Etcd].Addrs) != 3 || ep[impls.Etcd].Addrs[0] == cfg.Servers[impls.Etcd][0] {
		t.Fatalf("etcd endpoints %v must be the proxies in front of %v", ep[impls.Etcd].Addrs, cfg.Servers[impls.Etcd])
	}
	if !strings.Contains(ep.DSN(impls.Postgres), ext.NodesOf(impls.Postgres)[0].Addr()) {
		t.Fatalf("postgres DSN %q does not go through the proxy %s", ep.DSN(impls.Postgres), ext.NodesOf(impls.Postgres)[0].Addr())
	}
	conn, err := pgx.Connect(ctx, ep.DSN(impls.Postgres))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("query through the proxy: %v", err)
	}
}

// A port that accepts and hangs up (Docker's port proxy in front of a
// container whose server is not up yet) is not a healthy server, whatever
// its kind.
func TestExternalHealthWantsAnAnswerNotJustAConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	for _, k := range Kinds() {
		if k.external == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := k.speaks(ctx, l.Addr().String())
		cancel()
		if err == nil {
			t.Errorf("%s: a port that hangs up counted as a healthy server", k.Server)
		}
	}
}
