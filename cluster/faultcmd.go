package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/locklab/locklab/internal/faketime"
	"io"
	"net"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locklab/locklab/spawn"
)

// Fault commands: how server faults reach servers locklab did not start.
// The user's external config gives, per node (or per kind, for each of its
// nodes), the commands that pause, resume, kill, start, isolate and rejoin
// it, or move its clock, e.g. `ssh db1 sudo systemctl kill -s STOP
// redis-server`: Jepsen's model, where the control machine reaches the
// servers through a mechanism the user already runs. locklab runs each
// with `sh -c`, bounded by a timeout, and writes what it printed to the
// run's fault-commands.log.

// Fault command operations. A fault needs its pair: pausing a node needs
// the command that resumes it, killing one the command that starts it.
const (
	OpPause   = "pause"
	OpResume  = "resume"
	OpKill    = "kill"
	OpStart   = "start"
	OpIsolate = "isolate"
	OpRejoin  = "rejoin"
	// OpClock sets the server's clock to the real time plus {offset}
	// (libfaketime's form: +40.000 or -2.500 seconds).
	OpClock = "clock"
)

// faultOpPairs: each operation and the one it cannot go without.
var faultOpPairs = map[string]string{
	OpPause: OpResume, OpResume: OpPause, OpKill: OpStart, OpStart: OpKill,
	OpIsolate: OpRejoin, OpRejoin: OpIsolate, OpClock: "",
}

func faultOpNames() string {
	ops := make([]string, 0, len(faultOpPairs))
	for op := range faultOpPairs {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	return strings.Join(ops, ", ")
}

// DefaultFaultTimeout bounds one fault command (fault-timeout in the
// config overrides it): an ssh to a host that is gone must not hang a run.
const DefaultFaultTimeout = 30 * time.Second

// ErrFaultCommand wraps every failure of a user's fault command: a run
// where one failed did not inject what it says, which is an
// infrastructure error, not an observation.
var ErrFaultCommand = errors.New("fault command failed")

// faultCommandsYAML is the fault-commands key as written: per node name,
// node address or server kind, per operation, a shell command.
type faultCommandsYAML map[string]map[string]string

// nodeCommands are the fault commands of one node, its placeholders
// filled in but {offset}.
type nodeCommands struct {
	node string
	ops  map[string]string
	run  *commandRunner
	mu   sync.Mutex
	// killed: its kill command ran and its start has not, so a restart
	// starts it without killing it again (`systemctl kill` of a stopped
	// unit fails).
	killed bool
	offset lastOffset // what its clock command last set
}

// resolveFaultCommands turns the fault-commands key into the commands of
// each node (by node name), checking every key names a kind, a node or a
// node's address of this config, and every operation has its pair. A
// node's own commands override its kind's, operation by operation.
func resolveFaultCommands(raw faultCommandsYAML, nodes []externalNode) (map[string]map[string]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	byKey := map[string][]externalNode{}
	var names []string
	for _, n := range nodes {
		byKey[string(n.kind)] = append(byKey[string(n.kind)], n)
		byKey[n.name] = append(byKey[n.name], n)
		byKey[n.addr] = append(byKey[n.addr], n)
		names = append(names, n.name)
	}
	out := map[string]map[string]string{}
	// Kinds first, so a node's own commands override them.
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.SliceStable(keys, func(i, j int) bool {
		return isKindKey(keys[i], nodes) && !isKindKey(keys[j], nodes)
	})
	for _, key := range keys {
		ns, ok := byKey[key]
		if !ok {
			return nil, fmt.Errorf("fault-commands: %q is no server kind, node or address of this config (nodes: %s)", key, strings.Join(names, ", "))
		}
		for op, cmd := range raw[key] {
			if _, known := faultOpPairs[op]; !known {
				return nil, fmt.Errorf("fault-commands: %s: unknown operation %q (operations: %s)", key, op, faultOpNames())
			}
			if strings.TrimSpace(cmd) == "" {
				return nil, fmt.Errorf("fault-commands: %s: %s: empty command", key, op)
			}
			if op == OpClock && !strings.Contains(cmd, "{offset}") {
				return nil, fmt.Errorf("fault-commands: %s: clock: the command must use {offset}, the offset to set (+40.000 or -2.500 seconds)", key)
			}
			for _, n := range ns {
				if host, _, _ := net.SplitHostPort(n.addr); strings.Contains(cmd, "{host}") && !shellSafe(host) {
					return nil, fmt.Errorf("fault-commands: %s: {host} of %s is %q, which a shell command should not take unquoted", key, n.name, host)
				}
				if out[n.name] == nil {
					out[n.name] = map[string]string{}
				}
				out[n.name][op] = fillPlaceholders(cmd, n)
			}
		}
	}
	for _, n := range nodes {
		for op := range out[n.name] {
			if pair := faultOpPairs[op]; pair != "" && out[n.name][pair] == "" {
				return nil, fmt.Errorf("fault-commands: %s has %s but no %s: give both or neither", n.name, op, pair)
			}
		}
	}
	return out, nil
}

func isKindKey(key string, nodes []externalNode) bool {
	for _, n := range nodes {
		if string(n.kind) == key {
			return true
		}
	}
	return false
}

// fillPlaceholders puts the node's name, host and port for {node}, {host}
// and {port}; {offset} is filled when the clock command runs. Other
// braces are the shell's (${VAR}, awk '{print}').
func fillPlaceholders(cmd string, n externalNode) string {
	host, port, _ := net.SplitHostPort(n.addr)
	return strings.NewReplacer("{node}", n.name, "{host}", host, "{port}", port).Replace(cmd)
}

// shellSafe: s (a host name or address) needs no quoting in a shell.
func shellSafe(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-_:", r)) {
			return false
		}
	}
	return s != ""
}

// can says why the node has no commands for a fault made of ops, or nil.
func (c *nodeCommands) can(ops ...string) error {
	var missing []string
	for _, op := range ops {
		if c == nil || c.ops[op] == "" {
			missing = append(missing, op)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	name := "the node"
	if c != nil {
		name = c.node
	}
	return fmt.Errorf("locklab does not run %s and its fault-commands give no %s command", name, strings.Join(missing, " or "))
}

// do runs the node's command for op. A pause or resume that failed is run
// again (askedAgain). Other commands (a kill, a start) are not repeated
// behind the user's back.
func (c *nodeCommands) do(ctx context.Context, op string) error {
	if err := c.can(op); err != nil {
		return fmt.Errorf("%s: %w", op, ErrUnsupported)
	}
	run := func() error { return c.run.run(ctx, c.node, op, c.ops[op]) }
	if op == OpPause || op == OpResume {
		return askedAgain(ctx, run)
	}
	return run()
}

// askedAgain runs a pause or resume, and again, twice at most, when it
// failed: with both cores busy `docker pause` failed to freeze a starved
// container ("OCI runtime pause failed: unable to freeze"), twice in a row
// once, which leaves it as it was, and asking again is asking the same.
// One that ran out of time, or whose ctx ended, is not asked again.
func askedAgain(ctx context.Context, do func() error) error {
	err := do()
	for _, wait := range []time.Duration{200 * time.Millisecond, time.Second} {
		if err == nil || errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			break
		}
		time.Sleep(wait)
		err = do()
	}
	return err
}

// restart kills the node (unless its kill ran last) and starts it.
func (c *nodeCommands) restart(ctx context.Context) error {
	c.mu.Lock()
	killed := c.killed
	c.mu.Unlock()
	if !killed {
		if err := c.do(ctx, OpKill); err != nil {
			return err
		}
	}
	if err := c.do(ctx, OpStart); err != nil {
		c.setKilled(true)
		return err
	}
	c.setKilled(false)
	return nil
}

func (c *nodeCommands) setKilled(k bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.killed = k
}

// setClock runs the clock command with the offset d.
func (c *nodeCommands) setClock(ctx context.Context, d time.Duration) error {
	if err := c.can(OpClock); err != nil {
		return fmt.Errorf("%w: %w", err, ErrNoFakeTime)
	}
	cmd := strings.ReplaceAll(c.ops[OpClock], "{offset}", offsetString(d))
	if err := c.run.run(ctx, c.node, OpClock, cmd); err != nil {
		return err
	}
	c.offset.set(d)
	return nil
}

// commandRunner runs the fault commands of a cluster, one log for all.
type commandRunner struct {
	spawn   *spawn.Spawner
	timeout time.Duration
	mu      sync.Mutex
	log     io.Writer // nil: output kept in errors only
}

// maxCommandOutput bounds what one command's output keeps.
const maxCommandOutput = 64 << 10

// run runs command for op on node with `sh -c`, in a process group of its
// own that dies with locklab (the timeout kills the whole group: an ssh
// and what it started), and logs it with its output.
func (r *commandRunner) run(parent context.Context, node, op, command string) error {
	ctx, cancel := context.WithTimeout(parent, r.timeout)
	defer cancel()
	var out limitedBuffer
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	started := time.Now()
	err := r.spawn.Start(cmd)
	if err == nil {
		err = cmd.Wait()
	}
	took := time.Since(started)
	switch {
	case err == nil:
	case parent.Err() != nil:
		err = fmt.Errorf("cut short after %.1fs, when the run ended: %w", took.Seconds(), parent.Err())
	case ctx.Err() != nil:
		err = fmt.Errorf("timed out after %v (fault-timeout): %w", r.timeout, ctx.Err())
	}
	r.write(started, node, op, command, took, err, out.Bytes())
	if err != nil {
		said := ""
		if l := strings.TrimSpace(lastLine(string(out.Bytes()))); l != "" {
			said = ": " + l
		}
		return fmt.Errorf("fault command %s of %s (%s): %v%s: %w", op, node, command, err, said, ErrFaultCommand)
	}
	return nil
}

// write logs one command: when, what, how it ended, what it printed.
func (r *commandRunner) write(at time.Time, node, op, command string, took time.Duration, err error, out []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.log == nil {
		return
	}
	status := "exit 0"
	if err != nil {
		status = err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s: %s\n  %s after %.3fs\n", at.UTC().Format(time.RFC3339Nano), node, op, command, status, took.Seconds())
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if l != "" {
			fmt.Fprintf(&b, "  | %s\n", l)
		}
	}
	io.WriteString(r.log, b.String())
}

// limitedBuffer keeps the first maxCommandOutput bytes written to it.
type limitedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := maxCommandOutput - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (l *limitedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// offsetString is an offset as libfaketime reads it (faketime.Offset).
func offsetString(d time.Duration) string { return faketime.Offset(d) }

// decodeFaultTimeout reads fault-timeout.
func decodeFaultTimeout(v *yaml.Node) (time.Duration, error) {
	var s string
	if err := v.Decode(&s); err != nil {
		return 0, fmt.Errorf("line %d: fault-timeout: want a duration such as 30s: %w", v.Line, err)
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("line %d: fault-timeout %q: want a positive duration such as 30s", v.Line, s)
	}
	return d, nil
}
