package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/tcpproxy"
)

// What the failover fault needs of the Sentinel topology's primary. A Node
// knows only itself, so each step asks the servers: the primary names its
// replicas (INFO replication, at their own addresses), a replica says
// whether it has been promoted.

// CanFailover says why n cannot be failed over, or nil: only a data node of
// the Sentinel topology that locklab runs.
func (n *Node) CanFailover() error {
	if n.Server != impls.RedisSentinel || n.Name == "" || !isSentinelData(n) {
		return fmt.Errorf("%s is not a Redis of the Sentinel topology", n.Name)
	}
	if !n.Controllable() {
		return fmt.Errorf("%s: %w", n.Name, ErrUnsupported)
	}
	return nil
}

func isSentinelData(n *Node) bool { return n.Name == SentinelPrimary || n.Name == SentinelReplica }

// HeldReplication is replication from one primary held back: each replica
// was pointed at a proxy that passes nothing.
type HeldReplication struct {
	// Replicas are the replicas' own addresses, as the primary names
	// them.
	Replicas []string
	proxy    *tcpproxy.Proxy
	// prev is where each replica replicated from before, to point it back
	// if no failover happens.
	prev map[string]string
}

// HoldReplication cuts replication from the primary n to its replicas
// before anything else happens, so a write acknowledged by n afterwards
// certainly never reaches them. It does so by pointing each replica
// (REPLICAOF) at a proxy of n that holds every byte: this works
// whichever node is primary now, whereas the topology's own
// ReplicationLink only stands between the first primary and its replica,
// and a Node cannot reach the Cluster that owns it. The replica keeps its
// data and its place (Sentinel still promotes a replica whose link has been
// down for less than ten down-after periods). It waits until every replica
// is in step with n first: what was written before the cut did replicate.
func (n *Node) HoldReplication(ctx context.Context) (*HeldReplication, error) {
	return n.replication(ctx, true)
}

// ObserveReplication finds n's replicas as HoldReplication does (in step
// with n) but holds nothing back: Reopen then does nothing.
func (n *Node) ObserveReplication(ctx context.Context) (*HeldReplication, error) {
	return n.replication(ctx, false)
}

// ReplicationCut is what the failover fault keeps of a held or observed
// replication (chaos.ReplicationCut: the same type literal, so Node
// satisfies chaos.FailoverNode without this package importing chaos).
type ReplicationCut = interface {
	Reopen(ctx context.Context) error
	WaitPromoted(ctx context.Context, within time.Duration) error
}

// CutReplication is HoldReplication (hold) or ObserveReplication.
func (n *Node) CutReplication(ctx context.Context, hold bool) (ReplicationCut, error) {
	h, err := n.replication(ctx, hold)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// WaitPromoted waits until one of the held replicas is promoted.
func (h *HeldReplication) WaitPromoted(ctx context.Context, within time.Duration) error {
	_, err := WaitPromoted(ctx, h.Replicas, within)
	return err
}

func (n *Node) replication(ctx context.Context, hold bool) (*HeldReplication, error) {
	info, err := redisCommand(ctx, n.direct, "INFO replication")
	if err != nil {
		return nil, fmt.Errorf("replication of %s: %w", n.Name, err)
	}
	if role := infoField(info, "role"); role != "master" {
		return nil, fmt.Errorf("%s is not the primary (role %q)", n.Name, role)
	}
	h := &HeldReplication{prev: map[string]string{}}
	for i := 0; ; i++ {
		v := infoField(info, fmt.Sprintf("slave%d", i))
		if v == "" {
			break
		}
		kv := map[string]string{}
		for _, f := range strings.Split(v, ",") {
			k, val, _ := strings.Cut(f, "=")
			kv[k] = val
		}
		h.Replicas = append(h.Replicas, kv["ip"]+":"+kv["port"])
	}
	if len(h.Replicas) == 0 {
		return nil, fmt.Errorf("%s has no replica to fail over to", n.Name)
	}
	if err := waitInStep(ctx, n.direct, h.Replicas); err != nil {
		return nil, fmt.Errorf("replicas of %s: %w", n.Name, err)
	}
	if !hold {
		return h, nil
	}
	if h.proxy, err = newHeldProxy(n.Name+" held replication", n.direct); err != nil {
		return nil, err
	}
	for _, r := range h.Replicas {
		ri, err := redisCommand(ctx, r, "INFO replication")
		if err == nil {
			h.prev[r] = infoField(ri, "master_host") + " " + infoField(ri, "master_port")
			_, err = redisCommand(ctx, r, "REPLICAOF 127.0.0.1 "+portString(h.proxy.Listen))
		}
		if err != nil {
			return nil, errors.Join(fmt.Errorf("hold replication to %s: %w", r, err), h.Reopen(ctx))
		}
	}
	return h, nil
}

// Reopen ends the hold. A replica that is still one (no failover
// happened) is pointed back where it replicated from; a promoted one is
// left alone.
func (h *HeldReplication) Reopen(ctx context.Context) error {
	var errs []error
	for r, prev := range h.prev {
		info, err := redisCommand(ctx, r, "INFO replication")
		if err != nil || infoField(info, "role") != "slave" {
			continue // promoted, or gone: nothing to point back
		}
		if _, err := redisCommand(ctx, r, "REPLICAOF "+prev); err != nil {
			errs = append(errs, fmt.Errorf("point %s back at %s: %w", r, prev, err))
		}
	}
	if h.proxy != nil {
		h.proxy.Stop()
	}
	return errors.Join(errs...)
}

// waitInStep waits until every replica's acknowledged offset reaches the
// primary's offset as read at the start.
func waitInStep(ctx context.Context, primary string, replicas []string) error {
	info, err := redisCommand(ctx, primary, "INFO replication")
	if err != nil {
		return err
	}
	want := infoField(info, "master_repl_offset")
	return poll(ctx, 5*time.Second, func(ctx context.Context) error {
		for _, r := range replicas {
			ri, err := redisCommand(ctx, r, "INFO replication")
			if err != nil {
				return err
			}
			if got := infoField(ri, "slave_repl_offset"); !offsetAtLeast(got, want) {
				return fmt.Errorf("%s at offset %s, primary at %s", r, got, want)
			}
		}
		return nil
	})
}

// WaitPromoted waits up to within for one of replicas to say it is the
// primary (Sentinel sent it REPLICAOF NO ONE) and for every Sentinel to
// name it, and returns its address. Only then is the failover over: a
// Sentinel still on the old configuration, seeing the old primary come
// back, was seen to start a second failover that promoted the empty,
// restarted node and lost every key.
func WaitPromoted(ctx context.Context, replicas []string, within time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var promoted string
	err := poll(ctx, within, func(ctx context.Context) error {
		for _, r := range replicas {
			if info, err := redisCommand(ctx, r, "INFO replication"); err == nil && infoField(info, "role") == "master" {
				promoted = r
				return nil
			}
		}
		return errors.New("no replica promoted")
	})
	if err == nil {
		err = waitSentinelsAgree(ctx, promoted)
	}
	if err != nil {
		return "", fmt.Errorf("failover to one of %v: %w", replicas, err)
	}
	return promoted, nil
}

// waitSentinelsAgree listens to the Sentinels' hello messages on the new
// primary (each Sentinel publishes its view of the master there every 2 s,
// "ip,port,runid,epoch,name,master_ip,master_port,master_epoch") until
// every Sentinel of the topology has named primary as the master. The
// Sentinels are counted, not the channel's subscribers: a Sentinel
// reconnecting after a reconfiguration may be subscribed twice for a
// while, and a count that never matches was seen to wait out the deadline.
//
// A Sentinel reconfiguring the primary closes every client connection
// (CLIENT KILL TYPE normal and pubsub), possibly after we subscribed, so a
// dropped subscription is opened again until ctx ends; what was heard
// before it dropped still counts.
func waitSentinelsAgree(ctx context.Context, primary string) error {
	agree := map[string]bool{} // sentinel run id -> names primary
	for {
		err := listenSentinelsAgree(ctx, primary, agree)
		if err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func listenSentinelsAgree(ctx context.Context, primary string, agree map[string]bool) error {
	c := goredis.NewClient(&goredis.Options{Addr: primary, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	defer c.Close()
	const channel = "__sentinel__:hello"
	sub := c.Subscribe(ctx, channel)
	defer sub.Close()
	for {
		all := len(agree) >= sentinelCount
		for _, ok := range agree {
			all = all && ok
		}
		if all {
			return nil
		}
		m, err := sub.ReceiveMessage(ctx)
		if err != nil {
			return fmt.Errorf("sentinels on %s: %v agree so far: %w", primary, agree, err)
		}
		f := strings.Split(m.Payload, ",")
		if len(f) == 8 {
			agree[f[2]] = f[5]+":"+f[6] == primary
		}
	}
}

// WaitReplicaOf waits up to within until n (a restarted or resumed old
// primary) is a replica in step with its primary, as Sentinel makes it
// once it sees the node again: only then is the topology whole.
func (n *Node) WaitReplicaOf(ctx context.Context, within time.Duration) error {
	return poll(ctx, within, func(ctx context.Context) error {
		info, err := redisCommand(ctx, n.direct, "INFO replication")
		if err != nil {
			return err
		}
		if role, link := infoField(info, "role"), infoField(info, "master_link_status"); role != "slave" || link != "up" {
			return fmt.Errorf("%s: role %s, link %q", n.Name, role, link)
		}
		return nil
	})
}

// poll calls f every 50 ms until it returns nil, ctx ends or within passes.
func poll(ctx context.Context, within time.Duration, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		fctx, fcancel := context.WithTimeout(ctx, time.Second)
		err := f(fctx)
		fcancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within %v: %w", within, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func offsetAtLeast(got, want string) bool {
	var g, w int64
	if _, err := fmt.Sscan(got, &g); err != nil {
		return false
	}
	if _, err := fmt.Sscan(want, &w); err != nil {
		return false
	}
	return g >= w
}

func portString(hostport string) string {
	return hostport[strings.LastIndexByte(hostport, ':')+1:]
}
