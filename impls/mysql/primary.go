package mysql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// errNoPrimary: no node of a replicated topology takes writes (the
// primary is down and no replica promoted yet). Nothing was sent.
var errNoPrimary = errors.New("no node takes writes")

// primaryConnector connects a client of a replicated topology to the node
// that takes writes: each new connection asks the nodes in turn, the one
// that led last first, and keeps the first whose read_only is off, the flag
// ProxySQL routes writes by. A node that has not answered within a second
// is passed over: a paused or dead primary must not hold a client up once
// its replica is promoted. Connections already open stay where they are;
// one to a primary that died fails, and the next is made to whoever leads.
type primaryConnector struct {
	nodes []driver.Connector
	addrs []string
	last  atomic.Int32
}

func (p *primaryConnector) Connect(ctx context.Context) (driver.Conn, error) {
	var errs []error
	first := int(p.last.Load())
	for k := range p.nodes {
		i := (first + k) % len(p.nodes)
		conn, err := p.writable(ctx, i)
		if err == nil {
			p.last.Store(int32(i))
			return conn, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", p.addrs[i], err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("%w: %w", errNoPrimary, errors.Join(errs...))
}

// writable connects to node i and keeps the connection if it takes writes.
func (p *primaryConnector) writable(ctx context.Context, i int) (driver.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := p.nodes[i].Connect(ctx)
	if err != nil {
		return nil, err
	}
	ro, err := readOnly(ctx, conn)
	if err == nil && ro {
		err = errors.New("read-only")
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

func (p *primaryConnector) Driver() driver.Driver { return p.nodes[0].Driver() }

// readOnly asks the server on conn whether it refuses writes.
func readOnly(ctx context.Context, conn driver.Conn) (bool, error) {
	q, ok := conn.(driver.QueryerContext)
	if !ok {
		return false, errors.New("the driver's connection cannot query")
	}
	rows, err := q.QueryContext(ctx, "SELECT @@global.read_only", nil)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("no answer to SELECT @@global.read_only")
		}
		return false, err
	}
	switch x := v[0].(type) {
	case int64:
		return x != 0, nil
	case []byte:
		return string(x) != "0", nil
	}
	return false, fmt.Errorf("read_only is %T %v", v[0], v[0])
}
