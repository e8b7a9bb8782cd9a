package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/impls"
)

// ---- the kind ----

// redisKind: independent Redis masters (Redlock wants 5; the single-node
// approaches use the first).
func redisKind() Kind {
	return Kind{
		Server: impls.Redis,
		About:  "independent redis-server masters",
		Nodes:  5,
		Lanes:  true,
		// Up in about 0.1 s and stopped as fast (a row of
		// redis-setnx-px-lua starts them three times: 3 s a start made its
		// estimate 45 s against 35-36 s).
		StartCost: 500 * time.Millisecond,
		Settings: []Setting{{Name: redisPersistence,
			Values: []string{RedisPersistNone, RedisPersistAOFEverysec, RedisPersistAOFAlways, RedisPersistRDB}}},
		Binaries:    []Binary{{"redis-server", "redis-server"}},
		PublicImage: "redis:7.0",
		LocalImage:  "locklab/redis:bookworm",
		nodeName:    func(i int) string { return fmt.Sprintf("redis-%d", i) },
		startLocal: func(ctx context.Context, c *Cluster, cfg LocalConfig, n int) ([]*Node, error) {
			return inParallel(n, func(i int) (*Node, error) {
				return c.startRedis(ctx, i, redisOptions{persistence: cfg.Settings.Get(impls.Redis, redisPersistence), fakeTime: cfg.FakeTime})
			})
		},
		containers: func(c *Cluster, cfg LocalConfig, n int) []containerSpec {
			persist, _ := redisPersistenceArgs(cfg.Settings.Get(impls.Redis, redisPersistence)) // checked by With
			var specs []containerSpec
			for i := 0; i < n; i++ {
				specs = append(specs, containerSpec{name: fmt.Sprintf("redis-%d", i), server: impls.Redis, port: redisPort,
					fakeTime: cfg.FakeTime, tcmalloc: true,
					entrypoint: []string{"redis-server"},
					cmd:        append(redisContainerArgs(), persist...)})
			}
			return specs
		},
		health: func(c *Cluster, a string) func(context.Context) error { return c.redisHealth(a) },
		speaks: func(ctx context.Context, a string) error {
			_, err := redisCommand(ctx, a, "PING")
			if err != nil && strings.Contains(err.Error(), "redis answered") {
				return nil // an error reply (NOAUTH) is an answer
			}
			return err
		},
		endpoint: addressOnly,
		external: &externalForm{list: true, example: "[127.0.0.1:6379, ...] (independent masters)"},
		compose: func(w *composeWriter) {
			persist, _ := redisPersistenceArgs(RedisPersistNone)
			for i := 0; i < 5; i++ {
				w.service(composeService{name: fmt.Sprintf("redis-%d", i), server: impls.Redis, entrypoint: []string{"redis-server"},
					command: append(redisContainerArgs(), persist...), hostPort: composeRedisPort + i, port: 6379})
			}
		},
	}
}

// redisPort is the client port inside a Redis container; composeRedisPort
// the first of compose.yaml's five on 127.0.0.1.
const (
	redisPort        = "6379/tcp"
	composeRedisPort = 16379
)

// redisContainerArgs: a container's Redis listens on every address of its
// network (the published port reaches it through Docker's bridge).
func redisContainerArgs() []string {
	return []string{"--port", "6379", "--bind", "0.0.0.0", "--protected-mode", "no", "--dir", "/tmp"}
}

// ---- the server ----

// redisOptions say how every Redis node runs (LocalConfig's persistence
// and faketime settings).
type redisOptions struct {
	persistence string // see redisPersistenceArgs
	fakeTime    bool   // under libfaketime, its wall clock movable (faketime.go)
}

func (c *Cluster) startRedis(ctx context.Context, i int, opt redisOptions) (*Node, error) {
	name := fmt.Sprintf("redis-%d", i)
	dir := filepath.Join(c.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	persist, err := redisPersistenceArgs(opt.persistence)
	if err != nil {
		return nil, err
	}
	var env []string
	if opt.fakeTime {
		if env, err = fakeTimeEnv(dir, true); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return c.startNode(ctx, name, impls.Redis, func(ports []int) (*process, string, func(context.Context) error, error) {
		p := &process{
			name: name, dir: dir, logPath: filepath.Join(dir, "redis.log"), spawn: c.spawn, env: env,
			argv: append([]string{"redis-server", "--port", strconv.Itoa(ports[0]), "--bind", "127.0.0.1",
				"--dir", dir, "--daemonize", "no"}, persist...),
		}
		a := addr(ports[0])
		return p, a, c.redisHealth(a), nil
	}, 1)
}

// redisHealth: the node at a answers INFO (and says its version), and has
// loaded its data: INFO answers while a restarted node still reads its
// append-only file, when every command that touches a key gets -LOADING.
func (c *Cluster) redisHealth(a string) func(context.Context) error {
	return func(ctx context.Context) error {
		info, err := redisCommand(ctx, a, "INFO")
		if err != nil {
			return err
		}
		for _, l := range strings.Split(info, "\n") {
			l = strings.TrimSpace(l)
			if v, ok := strings.CutPrefix(l, "redis_version:"); ok {
				c.setVersion(impls.Redis, "redis "+v)
			}
			if l == "loading:1" {
				return errors.New("still loading its data")
			}
		}
		return nil
	}
}

// redisCommand sends one inline command and returns the raw reply; enough for
// a health check without a client library.
func redisCommand(ctx context.Context, a, cmd string) (string, error) {
	conn, err := dialAndSend(ctx, a, []byte(cmd+"\r\n"))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	head, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	switch head[0] {
	case '+', ':':
		return strings.TrimSpace(head[1:]), nil
	case '$':
		n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
		if err != nil || n < 0 {
			return "", fmt.Errorf("bad reply %q", head)
		}
		buf := make([]byte, n+2)
		if _, err := ioReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	default:
		return "", fmt.Errorf("redis answered %q", strings.TrimSpace(head))
	}
}

func ioReadFull(r *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
