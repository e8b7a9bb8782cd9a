// Package redis holds the Redis lock approaches, one file each.
package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/impls"
)

// Register adds every Redis approach to r.
func Register(r *impls.Registry) {
	r.Register(SetNXPXLuaApproach)
}

// DefaultTTL is the lease length when AcquireOptions.TTL is zero.
const DefaultTTL = 10 * time.Second

// maxKeyLen keeps keys sane; Redis itself would take 512 MB.
const maxKeyLen = 1024

func checkKey(key string) error {
	if key == "" || len(key) > maxKeyLen {
		return fmt.Errorf("%w: redis key must be 1..%d bytes, got %d", impls.ErrInvalidKey, maxKeyLen, len(key))
	}
	return nil
}

// newClient connects one lock client to one node, as its own process would:
// a single connection, no retries (a retried SET NX whose first attempt
// succeeded would report "not set"), and context deadlines on the socket.
func newClient(ctx context.Context, addr string) (*goredis.Client, error) {
	c := goredis.NewClient(&goredis.Options{
		Addr:                  addr,
		Protocol:              2, // no HELLO round trip on connect
		DisableIdentity:       true,
		MaxRetries:            -1,
		PoolSize:              1,
		DialTimeout:           2 * time.Second,
		ReadTimeout:           3 * time.Second,
		WriteTimeout:          3 * time.Second,
		ContextTimeoutEnabled: true,
	})
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("redis %s: %w: %w", addr, impls.ErrUnavailable, err)
	}
	return c, nil
}

// classify maps a failed command to the lab's outcomes. A command that could
// not even connect changed nothing (unavailable); anything else after the
// request may have been written (timeouts, resets) is indeterminate.
func classify(op string, err error) error {
	var opErr *net.OpError
	switch {
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return fmt.Errorf("%s: %w: %w", op, impls.ErrUnavailable, err)
	case isRedisError(err):
		return fmt.Errorf("%s: %w: %w", op, impls.ErrUnavailable, err)
	default:
		return fmt.Errorf("%s: %w: %w", op, impls.ErrIndeterminate, err)
	}
}

// isRedisError reports an error reply from the server (the command was
// refused, so it did not take effect).
func isRedisError(err error) bool {
	var re goredis.Error
	return errors.As(err, &re) && !errors.Is(err, goredis.Nil)
}

// newToken returns a random owner token, unique per acquire.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
