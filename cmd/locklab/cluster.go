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
	o := cluster.UpOptions{}
	for _, b := range only {
		o.Servers = append(o.Servers, impls.Server(b))
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintf(stderr, "locklab cluster up: %v\n", err)
		return exitUsage
	}
	_, docker, code := where.resolve(ctx, stderr)
	if code >= 0 {
		return code
	}
	if docker != nil {
		o.Docker = &cluster.DockerConfig{Images: docker.Images, AllowRemote: docker.AllowRemote, Connect: docker.Connect}
	}
	start := time.Now()
	c, err := cluster.Up(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "locklab cluster up: %v\n", err)
		if ctx.Err() != nil {
			return exitInterrupted
		}
		return exitInfra
	}
	defer c.Close()
	if code := printCluster(stdout, stderr, c, time.Since(start), *asJSON); code >= 0 {
		return code
	}
	<-ctx.Done()
	return exitOK
}

// printCluster says where the servers are, as JSON or a table; it
// returns an exit code if that failed, else -1.
func printCluster(stdout, stderr io.Writer, c *cluster.Cluster, took time.Duration, asJSON bool) int {
	nodes := c.NodeInfos()
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{
			"healthy_after_seconds": took.Seconds(), "nodes": nodes, "endpoints": c.Endpoints(), "versions": c.Versions,
		}); err != nil {
			fmt.Fprintf(stderr, "locklab cluster up: write: %v\n", err)
			return exitInfra
		}
		return -1
	}
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
	return -1
}

// defaultKinds are cluster.DefaultServers by name, for the flag.
func defaultKinds() []string {
	var out []string
	for _, s := range cluster.DefaultServers() {
		out = append(out, string(s))
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
