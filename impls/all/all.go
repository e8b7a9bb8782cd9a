// Package all registers every lock approach locklab ships: the registry
// the CLI uses, and the tests that check the shipped scenarios and matrix
// against it.
package all

import (
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/etcd"
	"github.com/locklab/locklab/impls/mysql"
	"github.com/locklab/locklab/impls/pg"
	"github.com/locklab/locklab/impls/redis"
	"github.com/locklab/locklab/impls/zk"
)

// Registry returns a registry of every approach.
func Registry() *impls.Registry {
	r := impls.NewRegistry()
	redis.Register(r)
	mysql.Register(r)
	zk.Register(r)
	etcd.Register(r)
	pg.Register(r)
	return r
}
