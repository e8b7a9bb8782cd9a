package cluster

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/impls"
)

// persisting is the settings of Redis nodes persisting as mode says.
func persisting(t testing.TB, mode string) Settings {
	t.Helper()
	s, err := Settings("").With(impls.Redis, redisPersistence, mode)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Settings: a kind's default is left out (so cases that state it and
// cases that do not share servers), any other value is kept and read
// back, and what no kind takes is a one-line error naming what it does.
func TestSettings(t *testing.T) {
	if s := persisting(t, RedisPersistNone); s != "" {
		t.Errorf("the default kept: %q", s)
	}
	s := persisting(t, RedisPersistAOFAlways)
	if got := s.Get(impls.Redis, redisPersistence); got != RedisPersistAOFAlways {
		t.Errorf("Get = %q, want %q", got, RedisPersistAOFAlways)
	}
	if got := Settings("").Get(impls.Redis, redisPersistence); got != RedisPersistNone {
		t.Errorf("Get of nothing = %q, want the default %q", got, RedisPersistNone)
	}
	if back, _ := s.With(impls.Redis, redisPersistence, RedisPersistNone); back != "" {
		t.Errorf("set back to the default: %q", back)
	}
	if err := s.check(); err != nil {
		t.Error(err)
	}
	for _, tc := range []struct {
		kind        impls.Server
		name, value string
		err         string
	}{
		{impls.Redis, redisPersistence, "sometimes", `persistence "sometimes": want none, aof-everysec, aof-always or rdb`},
		{impls.Redis, "persist", "always", `unknown key "persist" (known: persistence)`},
		{impls.ZooKeeper, "persistence", "none", `unknown key "persistence" (zookeeper servers take no settings)`},
		{"mongo", "persistence", "none", `unknown server kind "mongo"`},
	} {
		if _, err := s.With(tc.kind, tc.name, tc.value); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("With(%s, %s, %s) = %v, want %q", tc.kind, tc.name, tc.value, err, tc.err)
		}
	}
	if err := Settings("redis.persist=always").check(); err == nil {
		t.Error("check took a setting Redis does not have")
	}
}
