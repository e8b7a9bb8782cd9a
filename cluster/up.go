package cluster

import (
	"context"

	"github.com/locklab/locklab/impls"
)

// UpOptions are what `locklab cluster up` starts: servers of the given
// kinds, as local processes or, with Docker, in containers.
type UpOptions struct {
	Servers []impls.Server // the kinds to start; see DefaultServers
	Docker  *DockerConfig  // nil: local processes; its LocalConfig is filled from Servers
}

// DefaultServers are the kinds started unless told otherwise: every kind
// but those started only on request.
func DefaultServers() []impls.Server {
	var out []impls.Server
	for _, k := range Kinds() {
		if !k.OnRequest {
			out = append(out, k.Server)
		}
	}
	return out
}

// Validate says whether every kind is known.
func (o UpOptions) Validate() error {
	for _, s := range o.Servers {
		if _, err := KindOf(s); err != nil {
			return err
		}
	}
	return nil
}

// Up starts the servers o asks for; the caller closes the cluster.
func Up(ctx context.Context, o UpOptions) (*Cluster, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Docker != nil {
		cfg := *o.Docker
		cfg.LocalConfig = ForServers(o.Servers...)
		return StartDocker(ctx, cfg)
	}
	return StartLocal(ctx, ForServers(o.Servers...))
}

// NodeInfo is what `cluster up` says of a node.
type NodeInfo struct {
	Name   string `json:"name"`
	Server string `json:"server"`
	Addr   string `json:"addr"`
	Direct string `json:"direct_addr"`
	Pid    int    `json:"pid"`
}

// NodeInfos are the cluster's nodes, in start order.
func (c *Cluster) NodeInfos() []NodeInfo {
	var out []NodeInfo
	for _, n := range c.Nodes() {
		out = append(out, NodeInfo{n.Name, string(n.Server), n.Addr(), n.DirectAddr(), n.Pid()})
	}
	return out
}
