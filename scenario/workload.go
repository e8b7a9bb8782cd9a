package scenario

import (
	"encoding"
	"fmt"
	"github.com/locklab/locklab/yamlline"
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/workload"
)

// parseWorkload reads `workload:` (n; its key is on line) into a
// workload.Spec, fills in the defaults and checks the ranges.
func parseWorkload(n *yaml.Node, line int) (workload.Spec, error) {
	out, err := decodeSpec(n)
	if err != nil {
		return out, err
	}
	if out.Kind == "" {
		out.Kind = workload.Mutex
	}
	if err := workload.CheckKind(out.Kind); err != nil {
		return out, fmt.Errorf("line %d: workload: %w", line, err)
	}
	if out.Clients == 0 {
		out.Clients = 2
	}
	if out.Keys == 0 {
		out.Keys = 1
	}
	if out.TTL == 0 {
		out.TTL = 10 * time.Second
	}
	if out.Hold.Kind == "" {
		out.Hold = workload.Dist{Kind: "fixed"}
	}
	switch {
	case out.Clients < 1 || out.Clients > 4096:
		return out, fmt.Errorf("line %d: workload.clients %d out of range 1..4096", line, out.Clients)
	case out.Keys < 1:
		return out, fmt.Errorf("line %d: workload.keys must be at least 1", line)
	case out.TTL < 0:
		return out, fmt.Errorf("line %d: workload.ttl must not be negative", line)
	case out.AcquireTimeout < 0:
		return out, fmt.Errorf("line %d: workload.acquire-timeout must not be negative", line)
	case !(out.Reentry >= 0 && out.Reentry <= 1):
		return out, fmt.Errorf("line %d: workload.reentry is a share of holds from 0 to 1, got %v", line, out.Reentry)
	}
	return out, nil
}

// decodeSpec sets the fields of a workload.Spec that n's keys name by
// their yaml tags, so the keys a file may use are those the Spec declares
// and nowhere else. Unknown and repeated keys are refused; durations read
// as everywhere in a scenario (2s, 150ms, 0); a distribution as
// workload.ParseDist reads it. Every error names its line.
func decodeSpec(n *yaml.Node) (workload.Spec, error) {
	var spec workload.Spec
	if n.Kind == 0 {
		return spec, nil // no workload: every default
	}
	if n.Kind != yaml.MappingNode {
		return spec, fmt.Errorf("line %d: workload is a mapping (kind:, clients:, keys:, hold:, ...)", n.Line)
	}
	fields := map[string]int{}
	t := reflect.TypeOf(spec)
	for i := range t.NumField() {
		if key, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); key != "" && key != "-" {
			fields[key] = i
		}
	}
	v := reflect.ValueOf(&spec).Elem()
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		idx, ok := fields[k.Value]
		if !ok {
			return spec, fmt.Errorf("line %d: unknown key %q", k.Line, k.Value)
		}
		if seen[k.Value] {
			return spec, fmt.Errorf("line %d: workload.%s given twice", k.Line, k.Value)
		}
		seen[k.Value] = true
		if err := decodeField(val, v.Field(idx).Addr().Interface()); err != nil {
			return spec, fmt.Errorf("line %d: workload.%s: %w", val.Line, k.Value, err)
		}
	}
	return spec, nil
}

// decodeField reads one scalar into the field at p.
func decodeField(val *yaml.Node, p any) error {
	if val.ShortTag() == "!!null" {
		return nil // `ttl:` with nothing after it: the default, as yaml does elsewhere
	}
	if val.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a single value")
	}
	switch p := p.(type) {
	case *time.Duration:
		var d chaos.Duration
		err := d.UnmarshalText([]byte(val.Value))
		*p = d.D()
		return err
	case encoding.TextUnmarshaler:
		return p.UnmarshalText([]byte(val.Value))
	}
	if err := val.Decode(p); err != nil {
		// yaml's own message names the line already, and Go's types.
		_, msg, _ := strings.Cut(yamlline.Err(err).Error(), ": ")
		return fmt.Errorf("%s", msg)
	}
	return nil
}
