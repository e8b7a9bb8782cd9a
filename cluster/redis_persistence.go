package cluster

import "fmt"

// redisPersistence is the Redis setting (LocalConfig.Settings) that says
// how every node persists, one of the modes below.
const redisPersistence = "persistence"

// Redis persistence modes. What a lock key
// survives depends on them: a node restarted without persistence comes back
// empty, so every lock it held is free again while its holders still
// believe in them (the single-node lock grants twice; Redlock does when the
// node was one of its holder's bare majority).
const (
	RedisPersistNone        = "none"         // nothing is written: a restart loses every key
	RedisPersistAOFEverysec = "aof-everysec" // append-only file, fsync once a second
	RedisPersistAOFAlways   = "aof-always"   // append-only file, fsync before each reply
	RedisPersistRDB         = "rdb"          // snapshots only
)

// redisPersistenceArgs returns the redis-server flags for a mode ("" is
// none).
//
// Why each setting: with AOF, Redis writes the command to the file in
// beforeSleep, before it sends replies, so a SIGKILL (the process dies, the
// kernel keeps its page cache) loses no acknowledged SET under either fsync
// policy; only a power loss tells everysec from always. A snapshot is taken
// at most once a second after a change ("save 1 1"): a lock taken less than
// a second before a crash is lost, as in production with RDB alone.
func redisPersistenceArgs(mode string) ([]string, error) {
	switch mode {
	case "", RedisPersistNone:
		return []string{"--save", "", "--appendonly", "no"}, nil
	case RedisPersistAOFEverysec:
		return []string{"--save", "", "--appendonly", "yes", "--appendfsync", "everysec"}, nil
	case RedisPersistAOFAlways:
		return []string{"--save", "", "--appendonly", "yes", "--appendfsync", "always"}, nil
	case RedisPersistRDB:
		return []string{"--save", "1 1", "--appendonly", "no", "--dbfilename", "dump.rdb"}, nil
	}
	return nil, fmt.Errorf("redis persistence %q: want none, aof-everysec, aof-always or rdb", mode)
}
