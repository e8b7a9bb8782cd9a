package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/spawn"
)

// StartLocal starts the configured servers on 127.0.0.1 with free ports in a
// fresh temp dir, puts a proxy in front of each, and waits until all are
// healthy. On error nothing is left running.
func StartLocal(ctx context.Context, cfg LocalConfig) (_ *Cluster, err error) {
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	ks, _, err := cfg.kinds()
	if err != nil {
		return nil, err
	}
	for _, k := range ks {
		if err := k.checkBinaries(); err != nil {
			return nil, err
		}
	}
	dir, err := ownedTempDir(cfg.TempRoot)
	if err != nil {
		return nil, err
	}
	c := newCluster()
	c.dir = dir
	c.spawn = spawn.New()
	defer func() {
		if err != nil {
			c.Close()
		}
	}()

	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()

	err = c.startKinds(ctx, cfg, func(ctx context.Context, k Kind, n int) ([]*Node, error) {
		return k.startLocal(ctx, c, cfg, n)
	})
	if err != nil {
		if ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			return nil, fmt.Errorf("servers not healthy within %v: %w", cfg.StartTimeout, err)
		}
		return nil, err
	}
	return c, nil
}

// startNode runs one server with fresh free ports, retrying with other ports
// when the chosen one was taken in the meantime ("port in use").
func (c *Cluster) startNode(ctx context.Context, name string, server impls.Server, build func(ports []int) (*process, string, func(context.Context) error, error), nports int) (*Node, error) {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		ports, err := freePorts(nports)
		if err != nil {
			return nil, err
		}
		// Held until the server listens: a JVM binds its ports seconds
		// after they were found free (see holdPorts).
		held := holdPorts(ports)
		proc, direct, health, err := build(ports)
		if err != nil {
			held.release()
			return nil, err
		}
		proc.ports = ports
		n := &Node{Name: name, Server: server, direct: direct, proc: proc, health: health}
		if err := proc.start(); err != nil {
			held.release()
			return nil, err
		}
		err = waitHealthy(ctx, n)
		held.release()
		if err == nil {
			n.proxy, err = startProxy(name, direct)
			if err != nil {
				proc.stop(0)
				return nil, err
			}
			return n, nil
		}
		proc.stop(0)
		lastErr = err
		if !strings.Contains(strings.ToLower(proc.logTail(20)), "in use") {
			return nil, err
		}
	}
	return nil, lastErr
}

// ownedTempDir makes the temp dir of a cluster under root (default
// os.TempDir()), with this process's pid in it, after removing those of
// processes that are gone.
func ownedTempDir(root string) (string, error) {
	if root == "" {
		root = os.TempDir()
	}
	removeStaleDirs(root)
	dir, err := os.MkdirTemp(root, "locklab-")
	if err != nil {
		return "", fmt.Errorf("temp dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("temp dir: %w", err)
	}
	return dir, nil
}

// alive says whether process pid exists.
func alive(pid int) bool {
	return pid > 0 && !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// removeStaleDirs deletes temp dirs left by a locklab that was killed before
// it could clean up (its servers died with it through Pdeathsig).
func removeStaleDirs(root string) {
	dirs, _ := filepath.Glob(filepath.Join(root, "locklab-*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "owner.pid"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			continue
		}
		if !alive(pid) {
			os.RemoveAll(d)
		}
	}
}
