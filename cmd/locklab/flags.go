package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/adapter"
	"github.com/locklab/locklab/cluster"
	dockerengine "github.com/locklab/locklab/cluster/docker"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenario"
	"github.com/locklab/locklab/stall"
)

// newFlags returns a flag set that reports errors as one line (the caller
// prints it) and prints its help only when asked.
func newFlags(name string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("locklab "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	// The flag package calls Usage on every parse error; help is printed
	// only when asked for, by parseFlags.
	fs.Usage = func() {}
	return fs
}

func printHelp(fs *flag.FlagSet, stdout io.Writer) {
	fmt.Fprintf(stdout, "usage: %s [flags]\n", fs.Name())
	fs.SetOutput(stdout)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// parseFlags parses args; it returns the exit code to use, or -1 to go on.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return -1
	case errors.Is(err, flag.ErrHelp):
		printHelp(fs, stdout)
		return exitOK
	default:
		fmt.Fprintf(stderr, "%s: %v (see 'locklab help %s')\n", fs.Name(), flagError(fs, err), strings.TrimPrefix(fs.Name(), "locklab "))
		return exitUsage
	}
}

// badValue is how the flag package words a value it could not parse.
var badValue = regexp.MustCompile(`^invalid value "(.*)" for flag -([^:]+): (?:parse error|value out of range)$`)

// flagError says what is wrong with a flag's value and what form it
// wants, where the flag package says only "parse error".
func flagError(fs *flag.FlagSet, err error) error {
	m := badValue.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	value, name := m[1], m[2]
	f := fs.Lookup(name)
	if f == nil {
		return err
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return err
	}
	var want string
	switch g.Get().(type) {
	case time.Duration:
		want = "a duration with its unit, like 30s, 500ms or 2m"
		if _, err := strconv.ParseFloat(value, 64); err == nil {
			want += fmt.Sprintf(" (%ss for %s seconds)", value, value)
		}
	case int, int64:
		want = "a whole number"
	case uint, uint64:
		want = "a whole number, 0 or more"
	case float64:
		want = "a number"
	case bool:
		want = "true or false"
	default:
		return err
	}
	return fmt.Errorf("--%s %q: want %s", name, value, want)
}

// listFlag is a comma-separated list of strings.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error {
	*l = nil
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	if len(*l) == 0 {
		return errors.New("empty list")
	}
	return nil
}

// intsFlag is a comma-separated list of positive integers.
type intsFlag []int

func (l *intsFlag) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func (l *intsFlag) Set(s string) error {
	*l = nil
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 1 {
			return fmt.Errorf("%q is not a positive integer", p)
		}
		*l = append(*l, v)
	}
	return nil
}

// clusterFlags are --cluster, --config, --image and --allow-remote: where
// the servers run.
type clusterFlags struct {
	cmd         string
	mode        *string
	config      *string
	images      imageFlag
	allowRemote *bool
}

// addClusterFlags registers them on fs; external says whether the command
// takes the user's own servers (--cluster external).
func addClusterFlags(fs *flag.FlagSet, cmd string, external bool) *clusterFlags {
	f := &clusterFlags{cmd: cmd}
	modes := "local: start the servers on 127.0.0.1; docker: start them as containers (see --image)"
	if external {
		modes += "; external: use --config"
		f.config = fs.String("config", "", "YAML with server addresses, for --cluster external")
	}
	f.mode = fs.String("cluster", "local", modes)
	fs.Var(&f.images, "image", "with --cluster docker: local (the images scripts/images.sh builds), public (the default: redis:7.0, mariadb:10.11, ...), or SERVER=IMAGE for one server kind; repeatable")
	remote := "a Docker engine on another host (DOCKER_HOST)"
	if external {
		remote = "servers on other hosts: addresses in --config that are not loopback, or " + remote
	}
	f.allowRemote = fs.Bool("allow-remote", false, "send locklab's traffic and faults to "+remote)
	return f
}

// resolve checks the flags together; it returns the user's servers
// (--cluster external: their config, read), the Docker settings (nil
// otherwise), or an exit code >= 0 on bad usage. Servers on another host
// are refused without --allow-remote; with it, it says once which hosts
// locklab will send its traffic to.
func (f *clusterFlags) resolve(ctx context.Context, stderr io.Writer) (*cluster.ExternalConfig, *runner.Docker, int) {
	path, docker, code := f.check(stderr)
	if code >= 0 {
		return nil, nil, code
	}
	switch {
	case path != "":
		ext, err := runner.LoadExternal(ctx, path, *f.allowRemote)
		if err != nil {
			return nil, nil, exitCode(stderr, err)
		}
		if hosts := ext.RemoteHosts(); len(hosts) > 0 {
			by := "--allow-remote"
			if !*f.allowRemote {
				by = "allow-remote in " + path
			}
			fmt.Fprintf(stderr, "locklab %s: servers on other hosts, which locklab's traffic and faults will reach: %s (allowed by %s)\n", f.cmd, strings.Join(hosts, ", "), by)
		}
		return ext, nil, -1
	case docker != nil:
		docker.AllowRemote = *f.allowRemote
		if host := cluster.EngineElsewhere(os.Getenv("DOCKER_HOST")); host != "" && !*f.allowRemote {
			fmt.Fprintf(stderr, "locklab %s: DOCKER_HOST names a Docker engine on another host (%s): locklab floods its servers and injects faults, so it starts them there only with --allow-remote\n", f.cmd, host)
			return nil, nil, exitUsage
		}
		// An engine that does not answer is StartDocker's to report,
		// with the servers' start.
		if engine, err := cluster.FindDockerEngine(ctx, docker.Connect); err == nil && engine.Remote {
			if err := engine.Allowed(*f.allowRemote); err != nil {
				fmt.Fprintf(stderr, "locklab %s: %v\n", f.cmd, err)
				return nil, nil, exitUsage
			}
			fmt.Fprintf(stderr, "locklab %s: the Docker engine at %s is taken to be another machine's: its containers' ports are published on %s, and locklab's traffic and faults go there\n", f.cmd, engine.URL, engine.Host)
		}
	}
	return nil, docker, -1
}

// check checks the flags together; it returns the external config path
// ("" otherwise), the Docker settings (nil otherwise), or an exit code >= 0
// on bad usage.
func (f *clusterFlags) check(stderr io.Writer) (string, *runner.Docker, int) {
	config := ""
	if f.config != nil {
		config = *f.config
	}
	if len(f.images) > 0 && *f.mode != "docker" {
		fmt.Fprintf(stderr, "locklab %s: --image goes with --cluster docker\n", f.cmd)
		return "", nil, exitUsage
	}
	switch *f.mode {
	case "local", "docker":
		if config != "" {
			fmt.Fprintf(stderr, "locklab %s: --config goes with --cluster external\n", f.cmd)
			return "", nil, exitUsage
		}
		if *f.mode == "local" {
			return "", nil, -1
		}
		images, err := cluster.ParseImages(f.images)
		if err != nil {
			fmt.Fprintf(stderr, "locklab %s: %v\n", f.cmd, err)
			return "", nil, exitUsage
		}
		return "", &runner.Docker{Images: images, Connect: dockerengine.Connect}, -1
	case "external":
		if f.config == nil {
			break
		}
		if config == "" {
			fmt.Fprintf(stderr, "locklab %s: --cluster external needs --config FILE\n", f.cmd)
			return "", nil, exitUsage
		}
		return config, nil, -1
	}
	want := "local or docker"
	if f.config != nil {
		want = "local, docker or external"
	}
	fmt.Fprintf(stderr, "locklab %s: --cluster %q: want %s\n", f.cmd, *f.mode, want)
	return "", nil, exitUsage
}

// imageFlag collects --image values (repeatable, each comma-separated).
type imageFlag []string

func (l *imageFlag) String() string { return strings.Join(*l, ",") }
func (l *imageFlag) Set(s string) error {
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

// errWriter remembers the first write error, so a command can say its
// output was lost (a full disk, a closed pipe) instead of exiting 0.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	e.err = err
	return n, err
}

// approachFiles is --approach-file (repeatable): approaches from files
// (docs/protocol.md), registered beside the built-in ones.
type approachFiles []string

func (l *approachFiles) String() string { return strings.Join(*l, ",") }
func (l *approachFiles) Set(s string) error {
	*l = append(*l, s)
	return nil
}

func addApproachFiles(fs *flag.FlagSet) *approachFiles {
	f := &approachFiles{}
	fs.Var(f, "approach-file", "an approach from a file: a lock client program speaking docs/protocol.md; repeatable")
	return f
}

// register adds the files' approaches to reg, then the shipped ones
// (shippedDirs). It returns the exit code to use, or -1 to go on.
func (l *approachFiles) register(cmd string, reg *impls.Registry, stderr io.Writer) int {
	if err := adapter.Register(reg, *l); err != nil {
		fmt.Fprintf(stderr, "locklab %s: %v\n", cmd, err)
		return exitUsage
	}
	if err := adapter.RegisterShipped(reg, shippedDirs("approaches")); err != nil {
		fmt.Fprintf(stderr, "locklab %s: shipped approach: %v\n", cmd, err)
		return exitUsage
	}
	return -1
}

// registerScenarioFiles adds the approaches of the files a scenario names
// under approach-files: (a regression's pinned library versions) to reg.
// It returns the exit code to use, or -1 to go on.
func registerScenarioFiles(cmd string, reg *impls.Registry, path string, stderr io.Writer) int {
	files, err := scenario.ApproachFiles(path)
	if err == nil {
		err = adapter.Register(reg, files)
	}
	if err != nil {
		fmt.Fprintf(stderr, "locklab %s: %v\n", cmd, err)
		return exitUsage
	}
	return -1
}

// shippedDirs are where a folder shipped with locklab is: approaches/ (the
// adapters of Curator, kazoo, redis-py, python-etcd3) or regressions/ (the
// corpus of published lock bugs) of the repository locklab runs in, or of
// the one its binary was built in (bin/locklab).
func shippedDirs(name string) []string {
	dirs := []string{name}
	if exe, err := os.Executable(); err == nil {
		// Run from the repository, both name one folder: read it once.
		d := filepath.Join(filepath.Dir(filepath.Dir(exe)), name)
		if here, err := filepath.Abs(name); err != nil || here != d {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// flagSet reports whether the command line set flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// stallFlag is --stall-threshold: how late a wake-up of the stall
// monitor's probes must be to count as a stall of the lab.
type stallFlag struct {
	fs *flag.FlagSet
	d  *time.Duration
}

func addStallFlag(fs *flag.FlagSet) stallFlag {
	return stallFlag{fs: fs, d: fs.Duration("stall-threshold", stall.DefaultThreshold,
		"how late a wake-up of the stall monitor (a probe in locklab, in each worker and beside the containers) must be to count as a stall of the lab; a run whose deciding events fell in one is inconclusive; 0: no monitor")}
}

// apply sets p's threshold when the flag was given (otherwise a scenario's
// own, or the default, stands). It returns the exit code to use, or -1 to
// go on.
func (s stallFlag) apply(cmd string, p *runner.Plan, stderr io.Writer) int {
	switch {
	case *s.d < 0:
		fmt.Fprintf(stderr, "locklab %s: --stall-threshold %v: must not be negative (0: no stall monitor)\n", cmd, *s.d)
		return exitUsage
	case !flagSet(s.fs, "stall-threshold"):
	case *s.d == 0:
		p.StallThreshold = -1
	default:
		p.StallThreshold = *s.d
	}
	return -1
}

// isHelp reports whether arg asks for help, as the flag package reads it.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "--h", "-help", "--help":
		return true
	}
	return false
}

// alias is a deprecated name of another flag: it sets the same value, and
// its help shows no default, which the flag it stands for already shows.
type alias struct{ flag.Value }

func (a alias) String() string { return "" }
