package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/locklab/locklab/impls"
)

// ---- the kind ----

// etcdKind: an etcd cluster (3 members).
func etcdKind() Kind {
	return Kind{
		Server:      impls.Etcd,
		About:       "an etcd cluster",
		StartCost:   3 * time.Second,
		Nodes:       3,
		Binaries:    []Binary{{"etcd", "etcd-server"}},
		PublicImage: "gcr.io/etcd-development/etcd:v3.4.23",
		LocalImage:  "locklab/etcd:bookworm",
		NoFakeTime:  "etcd is a Go program, which reads the clock through the vDSO: libfaketime cannot move it (and its leases are timed on the monotonic clock anyway)",
		nodeName:    func(i int) string { return fmt.Sprintf("etcd-%d", i+1) },
		startLocal: func(ctx context.Context, c *Cluster, _ LocalConfig, n int) ([]*Node, error) {
			return c.startEtcd(ctx, n)
		},
		containers: func(_ *Cluster, _ LocalConfig, n int) []containerSpec {
			var specs []containerSpec
			for i := 0; i < n; i++ {
				specs = append(specs, containerSpec{name: fmt.Sprintf("etcd-%d", i+1), server: impls.Etcd, port: etcdPort,
					entrypoint: []string{"etcd"}, etcdMembers: n})
			}
			return specs
		},
		health: func(c *Cluster, a string) func(context.Context) error { return c.etcdHealth("http://" + a) },
		speaks: func(ctx context.Context, a string) error {
			return answers(ctx, a, []byte("GET /health HTTP/1.0\r\n\r\n"))
		},
		endpoint: addressOnly,
		role:     etcdRole,
		external: &externalForm{list: true, example: "[127.0.0.1:2379, ...] (members' client addresses)"},
		compose: func(w *composeWriter) {
			for i := 1; i <= 3; i++ {
				args := etcdArgs(fmt.Sprintf("etcd-%d", i), 3, fmt.Sprintf("http://127.0.0.1:%d", composeEtcdPort+i-1))
				w.service(composeService{name: fmt.Sprintf("etcd-%d", i), server: impls.Etcd, entrypoint: []string{"etcd"},
					command: args, hostPort: composeEtcdPort + i - 1, port: 2379})
			}
		},
	}
}

// etcdPort is the client port inside a member's container;
// composeEtcdPort the first of compose.yaml's three on 127.0.0.1.
const (
	etcdPort        = "2379/tcp"
	composeEtcdPort = 12379
)

// etcdRole reads the member's status through etcd's JSON gateway, which
// every etcd v3 serves on its client port: no gRPC client in cluster.
func etcdRole(ctx context.Context, n *Node) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+n.direct+"/v3/maintenance/status", bytes.NewReader([]byte("{}")))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("role of %s: %w", n.Name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return "", fmt.Errorf("role of %s: %w", n.Name, err)
	}
	// uint64 ids come as JSON strings from the gateway.
	var st struct {
		Header struct {
			MemberID string `json:"member_id"`
		} `json:"header"`
		Leader string `json:"leader"`
	}
	if err := json.Unmarshal(b, &st); err != nil || st.Header.MemberID == "" {
		return "", fmt.Errorf("role of %s: status %s: %q", n.Name, resp.Status, bytes.TrimSpace(b))
	}
	if st.Leader == st.Header.MemberID {
		return RoleLeader, nil
	}
	return RoleFollower, nil
}

// ---- the server ----

func (c *Cluster) startEtcd(ctx context.Context, size int) ([]*Node, error) {
	return c.startEnsemble(ctx, size, 2, func(i int, ports []int) (*Node, error) {
		var initial []string
		for j := 0; j < size; j++ { // client, peer port per node
			initial = append(initial, fmt.Sprintf("etcd-%d=http://127.0.0.1:%d", j+1, ports[2*j+1]))
		}
		name := fmt.Sprintf("etcd-%d", i+1)
		dir := filepath.Join(c.dir, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		client := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i])
		peer := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1])
		a := addr(ports[2*i])
		return &Node{
			Name: name, Server: impls.Etcd, direct: a,
			proc: &process{
				name: name, dir: dir, logPath: filepath.Join(dir, "etcd.log"), spawn: c.spawn,
				// Its orderly stop waits seconds to hand leadership to peers
				// that are stopping too; the data dir is deleted anyway.
				stopSig: syscall.SIGKILL,
				argv: []string{"etcd", "--name", name, "--data-dir", filepath.Join(dir, "data"),
					"--listen-client-urls", client, "--advertise-client-urls", client,
					"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
					"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
					"--initial-cluster-token", "locklab", "--heartbeat-interval", "50", "--election-timeout", "500"},
			},
			health: c.etcdHealth(client),
		}, nil
	})
}

// etcdHealth: the member at client (its URL) reports itself healthy.
func (c *Cluster) etcdHealth(client string) func(context.Context) error {
	return func(ctx context.Context) error {
		var health struct{ Health string }
		if err := getJSON(ctx, client+"/health", &health); err != nil {
			return err
		}
		if health.Health != "true" {
			return fmt.Errorf("health %q", health.Health)
		}
		var v struct{ Etcdserver string }
		if err := getJSON(ctx, client+"/version", &v); err == nil {
			c.setVersion(impls.Etcd, "etcd "+v.Etcdserver)
		}
		return nil
	}
}

func getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// etcdArgs: peers by name on the cluster's network; clients are told the
// published address.
func etcdArgs(name string, size int, advertise string) []string {
	var initial []string
	for j := 1; j <= size; j++ {
		initial = append(initial, fmt.Sprintf("etcd-%d=http://etcd-%d:2380", j, j))
	}
	return []string{"--name", name, "--data-dir", "/var/lib/locklab-etcd",
		"--listen-client-urls", "http://0.0.0.0:2379", "--advertise-client-urls", advertise,
		"--listen-peer-urls", "http://0.0.0.0:2380", "--initial-advertise-peer-urls", "http://" + name + ":2380",
		"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
		"--initial-cluster-token", "locklab", "--heartbeat-interval", "50", "--election-timeout", "500"}
}
