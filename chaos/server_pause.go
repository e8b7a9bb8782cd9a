package chaos

import "context"

// ServerPause stops a server process (SIGSTOP) and resumes it (SIGCONT) at
// the heal: it keeps its sockets, so clients see no error, only silence. To
// a lock holder this is a server pause: commands buffered in the server's
// socket are still executed at resume, also those whose client gave up in
// the meantime (an orphaned lock); a paused ensemble member may lose
// leadership, and etcd's new leader extends every lease.
//
// Options: none (the step's `for` is the pause). Targets: a node locklab
// runs, or one of the user's with pause and resume fault commands.
type ServerPause struct{}

func (ServerPause) Kind() string   { return "server-pause" }
func (ServerPause) Threat() string { return ThreatServerPause }

func (ServerPause) Ranges() Ranges { return DefaultRanges() }

func (ServerPause) Validate() error { return nil }

func (f ServerPause) Available(t Target) error { return needNodePause(f, t) }

func (f ServerPause) Inject(ctx context.Context, t Target) (Heal, error) {
	return pause(f, t)
}
