package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/impls"
)

// ---- the kind ----

// zooKeeperKind: a ZooKeeper ensemble (3 members: a quorum that survives
// one loss).
func zooKeeperKind() Kind {
	return Kind{
		Server:      impls.ZooKeeper,
		About:       "a ZooKeeper ensemble",
		StartCost:   3 * time.Second,
		Nodes:       3,
		Binaries:    []Binary{{"java", "zookeeper"}, {zkJar, "zookeeper"}},
		PublicImage: "zookeeper:3.8",
		LocalImage:  "locklab/zookeeper:bookworm",
		nodeName:    func(i int) string { return fmt.Sprintf("zk-%d", i+1) },
		startLocal: func(ctx context.Context, c *Cluster, cfg LocalConfig, n int) ([]*Node, error) {
			ns, err := c.startZooKeeper(ctx, n, cfg.ensembleSize(impls.ZooKeeper, n))
			if err == nil && cfg.FakeTime {
				err = restartUnderFakeTime(ctx, ns)
			}
			return ns, err
		},
		Ensembles: true,
		containers: func(_ *Cluster, cfg LocalConfig, n int) []containerSpec {
			var specs []containerSpec
			size := cfg.ensembleSize(impls.ZooKeeper, n)
			for i := 0; i < n; i++ {
				specs = append(specs, containerSpec{name: fmt.Sprintf("zk-%d", i+1), server: impls.ZooKeeper, port: zkClientPort,
					fakeTime:   cfg.FakeTime,
					entrypoint: []string{"sh", "-c", zooKeeperScript},
					env:        map[string]string{"ZK_MYID": strconv.Itoa(i + 1), "ZK_CFG": zooKeeperConfig(i/size*size, size)},
					sysctls:    zooKeeperSysctls})
			}
			return specs
		},
		health: func(c *Cluster, a string) func(context.Context) error { return c.zooKeeperHealth(a) },
		speaks: func(ctx context.Context, a string) error {
			_, err := ZKFourLetter(ctx, a, "srvr") // any answer, even "not in the whitelist"
			return err
		},
		endpoint: addressOnly,
		role:     zooKeeperRole,
		external: &externalForm{list: true, example: "[127.0.0.1:2181, ...] (ensemble members)"},
		compose: func(w *composeWriter) {
			for i := 1; i <= 3; i++ {
				w.service(composeService{name: fmt.Sprintf("zk-%d", i), server: impls.ZooKeeper, shell: zooKeeperScript,
					env:     [][2]string{{"ZK_MYID", strconv.Itoa(i)}, {"ZK_CFG", zooKeeperConfig(0, 3)}},
					sysctls: zooKeeperSysctls, hostPort: composeZooKeeperPort + i - 1, port: 2181})
			}
		},
	}
}

// zkClientPort is the client port inside a member's container;
// composeZooKeeperPort the first of compose.yaml's three on 127.0.0.1.
const (
	zkClientPort         = "2181/tcp"
	composeZooKeeperPort = 12181
)

const zkJar = "/usr/share/java/zookeeper.jar"

// zooKeeperRole asks the member itself, at its direct address (a fault on
// its proxy must not hide the answer): its `srvr` Mode line.
func zooKeeperRole(ctx context.Context, n *Node) (string, error) {
	out, err := ZKFourLetter(ctx, n.direct, "srvr")
	if err != nil {
		return "", fmt.Errorf("role of %s: %w", n.Name, err)
	}
	for _, l := range strings.Split(out, "\n") {
		if mode, ok := strings.CutPrefix(strings.TrimSpace(l), "Mode: "); ok {
			switch mode {
			case "leader", "follower", "standalone":
				return mode, nil
			}
			return "", fmt.Errorf("role of %s: mode %q", n.Name, mode)
		}
	}
	// A member without a quorum answers "This ZooKeeper instance is
	// not currently serving requests".
	return "", fmt.Errorf("role of %s: not serving: %s", n.Name, strings.TrimSpace(out))
}

// ---- the server ----

// startZooKeeper starts n members as ensembles of size, each knowing only
// its own (members first..first+size-1 of ensemble first/size), side by
// side: a JVM's start is mostly waiting.
func (c *Cluster) startZooKeeper(ctx context.Context, n, size int) ([]*Node, error) {
	ensembles := make([][]*Node, n/size)
	errs := make([]error, len(ensembles))
	var wg sync.WaitGroup
	for e := range ensembles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ensembles[e], errs[e] = c.startZooKeeperEnsemble(ctx, e*size, size)
		}()
	}
	wg.Wait()
	// What started is kept on error too: the cluster's Close stops it.
	return slices.Concat(ensembles...), errors.Join(errs...)
}

// startZooKeeperEnsemble starts one ensemble: members first+1..first+size.
func (c *Cluster) startZooKeeperEnsemble(ctx context.Context, first, size int) ([]*Node, error) {
	return c.startEnsemble(ctx, size, 3, func(m int, ports []int) (*Node, error) {
		var servers strings.Builder
		for j := 0; j < size; j++ { // client, peer, election port per node
			fmt.Fprintf(&servers, "server.%d=127.0.0.1:%d:%d\n", first+j+1, ports[3*j+1], ports[3*j+2])
		}
		i := first + m
		name := fmt.Sprintf("zk-%d", i+1)
		dir := filepath.Join(c.dir, name)
		data := filepath.Join(dir, "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(i+1)+"\n"), 0o644); err != nil {
			return nil, err
		}
		// A short tick keeps sessions and failure detection fast (a
		// dead leader is noticed after syncLimit ticks, 1 s). initLimit
		// bounds a member's connect and sync with the leader, which a
		// restarted member does with a cold JVM: 2 s (10 ticks) was not
		// enough on a loaded machine, so it timed out, rejoined the
		// election and timed out again until the health check gave up.
		cfg := fmt.Sprintf("tickTime=200\ninitLimit=50\nsyncLimit=5\ndataDir=%s\nclientPort=%d\n"+
			"clientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=*\n"+
			"maxClientCnxns=0\n%s", data, ports[3*m], servers.String())
		if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
			return nil, err
		}
		a := addr(ports[3*m])
		return &Node{
			Name: name, Server: impls.ZooKeeper, direct: a,
			proc: &process{
				name: name, dir: dir, logPath: filepath.Join(dir, "zookeeper.log"), spawn: c.spawn,
				argv: []string{"java", "-Xms64m", "-Xmx256m", "-XX:+UseSerialGC",
					// Between election rounds a member waits up to a second,
					// not ZooKeeper's 60 s (as zooKeeperScript): members
					// restarted seconds apart on a busy machine find each
					// other in the next round, not a minute later.
					"-Dzookeeper.fastleader.maxNotificationInterval=1000",
					// Debian's zookeeper.jar names its dependencies in its
					// manifest, all but a logging binding: without log4j here
					// SLF4J falls back to no-op and a failing server says
					// nothing at all.
					"-Dzookeeper.log.dir=" + dir, "-Dzookeeper.root.logger=WARN,CONSOLE",
					"-cp", "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar",
					"org.apache.zookeeper.server.quorum.QuorumPeerMain", "./zoo.cfg"},
			},
			health: c.zooKeeperHealth(a),
		}, nil
	})
}

// zooKeeperHealth: the member at a serves as leader or follower.
func (c *Cluster) zooKeeperHealth(a string) func(context.Context) error {
	return func(ctx context.Context) error {
		out, err := ZKFourLetter(ctx, a, "srvr")
		if err != nil {
			return err
		}
		if !strings.Contains(out, "Mode: leader") && !strings.Contains(out, "Mode: follower") {
			return fmt.Errorf("not serving yet")
		}
		for _, l := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(l, "Zookeeper version: "); ok {
				c.setVersion(impls.ZooKeeper, "zookeeper "+strings.SplitN(v, "-", 2)[0])
			}
		}
		return nil
	}
}

// ZKFourLetter sends a ZooKeeper four-letter command ("srvr", "ruok") and
// returns the answer.
func ZKFourLetter(ctx context.Context, a, cmd string) (string, error) {
	conn, err := dialAndSend(ctx, a, []byte(cmd))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	var sb strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if sb.Len() == 0 {
		return "", fmt.Errorf("no answer to %s", cmd)
	}
	return sb.String(), nil
}

// zooKeeperScript: Debian's jars, or the official image's distribution.
// maxNotificationInterval caps the wait between election rounds of a
// member looking for its peers (ZooKeeper doubles it up to 60 s): a member
// cut off for a while (server-isolate) tries its peers again within a
// second of its return instead of up to a minute later (with
// zooKeeperSysctls; TestDockerIsolatedZooKeeperLeaderIsReplaced).
const zooKeeperScript = `set -e
mkdir -p /var/lib/locklab-zk
echo "$ZK_MYID" >/var/lib/locklab-zk/myid
printf '%s\n' "$ZK_CFG" >/tmp/zoo.cfg
if [ -f /usr/share/java/zookeeper.jar ]; then
  cp=/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar
else
  cp=$(ls -d /apache-zookeeper-*/conf):$(ls /apache-zookeeper-*/lib/*.jar | tr '\n' ':')
fi
exec java -Xms64m -Xmx256m -XX:+UseSerialGC -Dzookeeper.fastleader.maxNotificationInterval=1000 \
  -Dzookeeper.root.logger=WARN,CONSOLE -cp "$cp" \
  org.apache.zookeeper.server.quorum.QuorumPeerMain /tmp/zoo.cfg`

// zooKeeperConfig is the zoo.cfg of the ensemble of members
// first+1..first+size: they find each other by their names on the
// cluster's network; timings as in the embedded mode.
func zooKeeperConfig(first, size int) string {
	var b strings.Builder
	b.WriteString("tickTime=200\ninitLimit=50\nsyncLimit=5\ndataDir=/var/lib/locklab-zk\nclientPort=2181\n" +
		"admin.enableServer=false\n4lw.commands.whitelist=*\nmaxClientCnxns=0\nquorumListenOnAllIPs=true\n")
	for j := first + 1; j <= first+size; j++ {
		fmt.Fprintf(&b, "server.%d=zk-%d:2888:3888\n", j, j)
	}
	return b.String()
}

// zooKeeperSysctls: a member cut off (server-isolate) keeps its
// connections to its peers, whose unanswered election messages the kernel
// retransmits with a doubling timeout; back on the network, it learned
// the connection was dead only at the next retransmission: it served
// again 11.6-12.9 s after its return when it had been away 15 s
// (TestDockerIsolatedZooKeeperLeaderIsReplaced), and on a loaded machine
// not within the 30 s a run gives servers to recover. Three retries give
// up on a dead connection within seconds, and ZooKeeper opens a new one at
// its next election round (at most a second away: zooKeeperScript).
var zooKeeperSysctls = map[string]string{"net.ipv4.tcp_retries2": "3"}
