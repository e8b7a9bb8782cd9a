package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
)

func cmdCluster(ctx context.Context, reg *impls.Registry, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "up" {
		usage := fmt.Sprintf("locklab cluster up [--json] [--servers %s]: start the servers and print their addresses (see 'locklab cluster up --help')", strings.Join(defaultKinds(), ","))
		if len(args) == 1 && isHelp(args[0]) {
			fmt.Fprintf(stdout, "usage: %s\n", usage)
			return exitOK
		}
		fmt.Fprintf(stderr, "locklab cluster: want '%s'\n", usage)
		return exitUsage
	}
	fs := newFlags("cluster up", stdout)
	asJSON := fs.Bool("json", false, "print the addresses as JSON")
	only := listFlag(defaultKinds())
	fs.Var(&only, "servers", "which servers to start: "+kindsHelp())
	fs.Var(alias{&only}, "backends", "deprecated: the same as --servers")
	where := addClusterFlags(fs, "cluster up", false)
	if code := parseFlags(fs, args[1:], stdout, stderr); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "locklab cluster up: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	var bs []impls.Server
	for _, b := range only {
		if _, err := cluster.KindOf(impls.Server(b)); err != nil {
			fmt.Fprintf(stderr, "locklab cluster up: %v\n", err)
			return exitUsage
		}
		bs = append(bs, impls.Server(b))
	}
	_, docker, code := where.resolve(ctx, stderr)
	if code >= 0 {
		return code
	}
	start := time.Now()
	var c *cluster.Cluster
	var err error
	if docker != nil {
		c, err = cluster.StartDocker(ctx, cluster.DockerConfig{LocalConfig: cluster.ForServers(bs...), Images: docker.Images, AllowRemote: docker.AllowRemote, Connect: docker.Connect})
	} else {
		c, err = cluster.StartLocal(ctx, cluster.ForServers(bs...))
	}
	if err != nil {
		fmt.Fprintf(stderr, "locklab cluster up: %v\n", err)
		if ctx.Err() != nil {
			return exitInterrupted
		}
		return exitInfra
	}
	defer c.Close()
	took := time.Since(start)
	type nodeJSON struct {
		Name   string `json:"name"`
		Server string `json:"server"`
		Addr   string `json:"addr"`
		Direct string `json:"direct_addr"`
		Pid    int    `json:"pid"`
	}
	var nodes []nodeJSON
	for _, n := range c.Nodes() {
		nodes = append(nodes, nodeJSON{n.Name, string(n.Server), n.Addr(), n.DirectAddr(), n.Pid()})
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{
			"healthy_after_seconds": took.Seconds(), "nodes": nodes, "endpoints": c.Endpoints(), "versions": c.Versions,
		}); err != nil {
			fmt.Fprintf(stderr, "locklab cluster up: write: %v\n", err)
			return exitInfra
		}
	} else {
		fmt.Fprintf(stdout, "%d nodes healthy after %.2fs (clients connect through the proxy address)\n", len(nodes), took.Seconds())
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NODE\tKIND\tPROXY\tSERVER\tPID")
		for _, n := range nodes {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", n.Name, n.Server, n.Addr, n.Direct, n.Pid)
		}
		tw.Flush()
		ep := c.Endpoints()
		for _, k := range cluster.KindNames() {
			if dsn := ep.DSN(impls.Server(k)); dsn != "" {
				fmt.Fprintf(stdout, "%s DSN: %s\n", k, dsn)
			}
		}
		fmt.Fprintln(stdout, "Ctrl-C stops them.")
	}
	<-ctx.Done()
	return exitOK
}

// defaultKinds are the server kinds `cluster up` starts unless told
// otherwise: every kind but those started only on request.
func defaultKinds() []string {
	var out []string
	for _, k := range cluster.Kinds() {
		if !k.OnRequest {
			out = append(out, string(k.Server))
		}
	}
	return out
}

// kindsHelp names every kind with what a cluster of it is.
func kindsHelp() string {
	var out []string
	for _, k := range cluster.Kinds() {
		out = append(out, fmt.Sprintf("%s (%s, %d)", k.Server, k.About, k.Nodes))
	}
	return strings.Join(out, "; ")
}
