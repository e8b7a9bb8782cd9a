// Package tcpproxy is the lab's TCP proxy. Every client reaches a server
// through one, so that a network fault (a partition, dropped or slow
// replies) acts on what the client sends and hears while the server runs
// untouched. A fault is a Toxic added to a proxy and removed at its heal.
//
// With no toxic on a direction, a chunk read is written straight on by the
// goroutine that read it: the proxy costs one extra read and write per
// chunk. A direction with toxics queues chunks to a writer of its own,
// which applies them.
package tcpproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Direction is which way bytes flow through a proxy.
type Direction int

const (
	Upstream   Direction = iota // client to server: requests
	Downstream                  // server to client: replies
)

func (d Direction) String() string {
	if d == Upstream {
		return "upstream"
	}
	return "downstream"
}

// Kind is what a toxic does to the bytes of its direction.
type Kind int

const (
	// Hold lets nothing through and keeps every byte; its removal hands
	// them on, in order, and the connection goes on. A side that closed
	// meanwhile has its close handed on after its bytes.
	Hold Kind = iota
	// Drop lets nothing through and loses the bytes; its removal closes
	// both sides of every connection that was open while it was on: a
	// stream with a hole in it cannot go on.
	Drop
	// Slow delays each chunk by Latency ± Jitter from its arrival. A
	// chunk being delayed when the direction's toxics change goes on
	// without the rest of its delay.
	Slow
)

func (k Kind) String() string {
	return [...]string{"hold", "drop", "slow"}[k]
}

// Toxic is one fault on one direction of a proxy.
type Toxic struct {
	Kind      Kind
	Direction Direction
	Latency   time.Duration // Slow
	Jitter    time.Duration // Slow: each chunk's delay is uniform in Latency ± Jitter
}

// FlushWait bounds how long a removal waits for the bytes a Hold or Slow
// toxic kept to be written on. A receiver that reads nothing for this long
// (or a writer whose far side has gone) has its connection closed rather
// than the heal kept waiting.
const FlushWait = 5 * time.Second

// holdLimit bounds what one direction of one connection queues; past it
// the proxy stops reading, so the sender blocks as on a real network once
// TCP's windows are full.
const holdLimit = 64 << 20

// dialWait bounds the dial of the server for a connection accepted.
const dialWait = 5 * time.Second

// Proxy listens on a loopback port and forwards each connection to its
// upstream address.
type Proxy struct {
	Name     string
	Listen   string // the address clients dial, once Start returned
	upstream string

	mu      sync.Mutex
	ln      net.Listener
	conns   map[*conn]struct{}
	toxics  [2][]*Added
	changed [2]chan struct{} // closed and replaced when toxics[d] changes
	active  [2]atomic.Int32  // len(toxics[d]), for the straight path
	stopped bool
	wg      sync.WaitGroup
}

// New is a proxy named name (for messages) in front of upstream. It
// listens once started.
func New(name, upstream string) *Proxy {
	p := &Proxy{Name: name, upstream: upstream, conns: map[*conn]struct{}{}}
	for d := range p.changed {
		p.changed[d] = make(chan struct{})
	}
	return p
}

// Start listens on a free loopback port (Listen) and serves in the
// background until Stop.
func (p *Proxy) Start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("proxy %s: %w", p.Name, err)
	}
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		ln.Close()
		return fmt.Errorf("proxy %s: %w", p.Name, ErrStopped)
	}
	p.ln, p.Listen = ln, ln.Addr().String()
	p.wg.Add(1)
	p.mu.Unlock()
	go p.serve(ln)
	return nil
}

// Stop closes the listener and every connection, and waits for their
// goroutines to end. Toxics still on are dropped with it.
func (p *Proxy) Stop() {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	if p.ln != nil {
		p.ln.Close()
	}
	conns := make([]*conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	p.wg.Wait()
}

// Toxics is how many toxics are on the proxy.
func (p *Proxy) Toxics() int {
	return int(p.active[Upstream].Load() + p.active[Downstream].Load())
}

func (p *Proxy) serve(ln net.Listener) {
	defer p.wg.Done()
	for {
		client, err := ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.open(client)
	}
}

// open dials the server for a client just accepted: at once, whatever the
// toxics, as a proxy's host has no way to hold a SYN back.
func (p *Proxy) open(client net.Conn) {
	defer p.wg.Done()
	server, err := net.DialTimeout("tcp", p.upstream, dialWait)
	if err != nil {
		client.Close()
		return
	}
	c := &conn{p: p, client: client, server: server, done: make(chan struct{})}
	c.pipes[Upstream] = newPipe(c, Upstream, client, server)
	c.pipes[Downstream] = newPipe(c, Downstream, server, client)
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		client.Close()
		server.Close()
		return
	}
	p.conns[c] = struct{}{}
	for d := range p.toxics {
		for _, a := range p.toxics[d] {
			a.witness(c)
		}
	}
	p.wg.Add(4)
	p.mu.Unlock()
	for _, pi := range c.pipes {
		go func() { defer p.wg.Done(); pi.read() }()
		go func() { defer p.wg.Done(); pi.write() }()
	}
}

// Add puts t on the proxy: chunks read after it returns meet it.
func (p *Proxy) Add(t Toxic) (*Added, error) {
	switch {
	case t.Kind < Hold || t.Kind > Slow:
		return nil, fmt.Errorf("proxy %s: toxic kind %d unknown", p.Name, t.Kind)
	case t.Direction != Upstream && t.Direction != Downstream:
		return nil, fmt.Errorf("proxy %s: direction %d unknown", p.Name, t.Direction)
	case t.Kind == Slow && (t.Latency < 0 || t.Jitter < 0 || t.Jitter > t.Latency):
		return nil, fmt.Errorf("proxy %s: slow toxic latency %v ± %v: want 0 <= jitter <= latency", p.Name, t.Latency, t.Jitter)
	}
	a := &Added{p: p, t: t}
	if t.Kind == Drop {
		a.doomed = map[*conn]struct{}{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return nil, fmt.Errorf("proxy %s: %w", p.Name, ErrStopped)
	}
	for c := range p.conns {
		a.witness(c)
	}
	p.toxics[t.Direction] = append(p.toxics[t.Direction], a)
	p.active[t.Direction].Add(1)
	p.changedLocked(t.Direction)
	return a, nil
}

func (p *Proxy) changedLocked(d Direction) {
	close(p.changed[d])
	p.changed[d] = make(chan struct{})
}

// Added is a toxic on a proxy, until its Remove.
type Added struct {
	p       *Proxy
	t       Toxic
	doomed  map[*conn]struct{} // Drop: the connections its removal closes
	removed bool
}

// witness notes a connection open while a Drop is on.
func (a *Added) witness(c *conn) {
	if a.doomed != nil {
		a.doomed[c] = struct{}{}
	}
}

// Remove takes the toxic off its proxy. A Drop closes the connections it
// saw; the last Hold or Slow on a direction waits, at most FlushWait (or
// ctx), for what the direction had queued to be written on, and closes a
// connection that could not take it. Removing twice is a no-op.
func (a *Added) Remove(ctx context.Context) error {
	p, d := a.p, a.t.Direction
	p.mu.Lock()
	if a.removed {
		p.mu.Unlock()
		return nil
	}
	a.removed = true
	list := p.toxics[d]
	for i, x := range list {
		if x == a {
			p.toxics[d] = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	p.active[d].Add(-1)
	var flushes []flush
	// Bytes flow on once the direction has no toxic left; while another
	// is on, its own removal waits for them.
	if a.t.Kind != Drop && len(p.toxics[d]) == 0 {
		for c := range p.conns {
			if done := c.pipes[d].flushed(); done != nil {
				flushes = append(flushes, flush{c, done})
			}
		}
	}
	p.changedLocked(d)
	doomed := a.doomed
	a.doomed = nil
	p.mu.Unlock()

	for c := range doomed {
		c.close()
	}
	if len(flushes) == 0 {
		return nil
	}
	wait := time.NewTimer(FlushWait)
	defer wait.Stop()
	var err error
	for _, f := range flushes {
		if f.flushed() {
			continue // checked first: once the wait is over, its case is always ready
		}
		select {
		case <-f.done:
		case <-f.c.done:
		case <-wait.C:
			f.c.close()
			wait.Reset(0)
		case <-ctx.Done():
			f.c.close()
			err = fmt.Errorf("proxy %s: %s %s removed before its bytes were handed on: %w", p.Name, a.t.Kind, d, ctx.Err())
		}
	}
	return err
}

// flush is a connection whose queued bytes a removal waits for.
type flush struct {
	c    *conn
	done <-chan struct{}
}

// flushed says whether they were handed on, or the connection closed.
func (f flush) flushed() bool {
	select {
	case <-f.done:
		return true
	case <-f.c.done:
		return true
	default:
		return false
	}
}

// state is what a direction's toxics do to the chunk at its head.
type state struct {
	drop, hold bool
	slow       []Toxic
	changed    <-chan struct{}
}

func (p *Proxy) state(d Direction) state {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := state{changed: p.changed[d]}
	for _, a := range p.toxics[d] {
		switch a.t.Kind {
		case Drop:
			st.drop = true
		case Hold:
			st.hold = true
		case Slow:
			st.slow = append(st.slow, a.t)
		}
	}
	return st
}

// ErrStopped is what Add says of a stopped proxy.
var ErrStopped = errors.New("proxy stopped")
