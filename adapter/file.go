package adapter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/yamlline"
)

// Spec is an approach from a file: what the file says, its command
// resolved.
type Spec struct {
	Path string // the file
	Name string
	// Argv starts one adapter; a relative program path was made absolute
	// from Dir, a bare name is looked up on PATH.
	Argv []string
	// Dir is the file's directory: the adapter's working directory.
	Dir             string
	Server          impls.Server
	Nodes           int
	Caps            impls.Capabilities
	Weak            impls.Weaknesses
	Safe            bool
	CrashFreedAfter time.Duration
	StartTimeout    time.Duration
	Options         map[string]any
	Summary         string
	Survives        string
	Fails           string
	Library         string
	// grace replaces Grace where set (tests of adapters that never answer).
	grace time.Duration
}

// DefaultStartTimeout is how long an adapter may take to say ready when
// its file does not say: a JVM and its connections take seconds.
const DefaultStartTimeout = 30 * time.Second

// fileFormat is an approach file as written.
type fileFormat struct {
	Name            string         `yaml:"name"`
	Command         []string       `yaml:"command"`
	Server          string         `yaml:"server"`
	Nodes           int            `yaml:"nodes"`
	Capabilities    []string       `yaml:"capabilities"`
	Weaknesses      []string       `yaml:"weaknesses"`
	Safe            *bool          `yaml:"safe"`
	CrashFreedAfter string         `yaml:"crash-freed-after"`
	StartTimeout    string         `yaml:"start-timeout"`
	Options         map[string]any `yaml:"options"`
	Summary         string         `yaml:"summary"`
	Survives        string         `yaml:"survives"`
	Fails           string         `yaml:"fails"`
	Library         string         `yaml:"library"`
}

// maxFileSize bounds what Load reads: an approach file is a page.
const maxFileSize = 1 << 20

var (
	validName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
)

// Load reads an approach file. Its errors are one line, name the file and,
// where they can, the line.
func Load(path string) (*Spec, error) {
	s, err := load(path)
	if err != nil {
		return nil, fmt.Errorf("approach file %s: %w", path, err)
	}
	return s, nil
}

func load(path string) (*Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read: %w", errors.Unwrap(err))
	}
	if len(b) > maxFileSize {
		return nil, fmt.Errorf("larger than %d bytes: not an approach file", maxFileSize)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, yamlline.Err(err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("not a mapping of name:, command:, server:, ...")
	}
	root := doc.Content[0]
	var f fileFormat
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, yamlline.Err(err)
	}
	at := func(key string) string { return fmt.Sprintf("line %d", yamlline.KeyLine(root, key)) }
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	s := &Spec{Path: path, Name: f.Name, Dir: filepath.Dir(abs), Server: impls.Server(f.Server), Nodes: f.Nodes,
		Safe: true, StartTimeout: DefaultStartTimeout, Options: f.Options,
		Summary: f.Summary, Survives: f.Survives, Fails: f.Fails, Library: f.Library}
	_, unknownKind := cluster.KindOf(s.Server)
	switch {
	case f.Name == "":
		return nil, fmt.Errorf("line %d: name is missing", root.Line)
	case !validName.MatchString(f.Name):
		return nil, fmt.Errorf("%s: name %q: use lower-case letters, digits, '-', '.' and '_'", at("name"), f.Name)
	case len(f.Command) == 0 || f.Command[0] == "":
		return nil, fmt.Errorf("%s: command is missing (a list: [program, arguments...])", at("command"))
	case f.Server == "":
		return nil, fmt.Errorf("line %d: server is missing (one of: %s)", root.Line, strings.Join(cluster.KindNames(), ", "))
	case unknownKind != nil:
		return nil, fmt.Errorf("%s: server %q: want one of %s", at("server"), f.Server, strings.Join(cluster.KindNames(), ", "))
	case f.Library != "" && len(strings.Fields(f.Library)) != 2:
		return nil, fmt.Errorf("%s: library %q: want NAME VERSION, like go.etcd.io/etcd/client/v3 v3.5.0 or python3-kazoo 2.9.0-1", at("library"), f.Library)
	case f.Nodes < 0:
		return nil, fmt.Errorf("%s: nodes %d: want 0 (all) or more", at("nodes"), f.Nodes)
	}
	s.Argv = append([]string(nil), f.Command...)
	if prog := s.Argv[0]; strings.ContainsRune(prog, '/') && !filepath.IsAbs(prog) {
		s.Argv[0] = filepath.Join(s.Dir, prog)
	}
	for _, c := range f.Capabilities {
		if err := s.Caps.Set(c); err != nil {
			return nil, fmt.Errorf("%s: %w", at("capabilities"), err)
		}
	}
	for _, w := range f.Weaknesses {
		if err := s.Weak.Set(w); err != nil {
			return nil, fmt.Errorf("%s: %w", at("weaknesses"), err)
		}
	}
	if f.Safe != nil {
		s.Safe = *f.Safe
	}
	for _, d := range []struct {
		key, val string
		to       *time.Duration
		positive bool
	}{{"crash-freed-after", f.CrashFreedAfter, &s.CrashFreedAfter, false}, {"start-timeout", f.StartTimeout, &s.StartTimeout, true}} {
		if d.val == "" {
			continue
		}
		v, err := time.ParseDuration(d.val)
		if err != nil || v < 0 || (d.positive && v == 0) {
			return nil, fmt.Errorf("%s: %s %q: want a duration like 30s", at(d.key), d.key, d.val)
		}
		*d.to = v
	}
	return s, nil
}

// Approach is the approach the file describes: New starts one adapter.
func (s *Spec) Approach() impls.Approach {
	return impls.Approach{Name: s.Name, Server: s.Server, Caps: s.Caps, Weak: s.Weak, Safe: s.Safe,
		CrashFreedAfter: s.CrashFreedAfter, Nodes: s.Nodes, Survives: s.Survives, Summary: s.Summary, Fails: s.Fails,
		Library: s.Library, OwnProcess: true, StartTimeout: s.StartTimeout,
		New: func(ctx context.Context, env impls.Env) (impls.Locker, error) { return Start(ctx, s, env) }}
}

// Register loads each approach file and adds its approach to reg; a name
// already taken is an error, not a replacement.
func Register(reg *impls.Registry, paths []string) error {
	for _, p := range paths {
		s, err := Load(p)
		if err != nil {
			return err
		}
		if _, err := reg.Get(s.Name); err == nil {
			return fmt.Errorf("approach file %s: name %q is taken by another approach", p, s.Name)
		}
		reg.Register(s.Approach())
	}
	return nil
}

// RegisterShipped adds the approach files in dirs (*.yaml) to reg, except
// those whose name is taken (an approach given on the command line wins
// over a shipped one of the same name). A dir that does not exist is
// skipped: locklab run outside its repository has no shipped adapters.
func RegisterShipped(reg *impls.Registry, dirs []string) error {
	for _, dir := range dirs {
		paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			return err
		}
		for _, p := range paths {
			s, err := Load(p)
			if err != nil {
				return err
			}
			if _, err := reg.Get(s.Name); err == nil {
				continue
			}
			reg.Register(s.Approach())
		}
	}
	return nil
}
