package chaos

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// faults is every fault a scenario can name. Adding one: a file with its
// type, and one line here. A map of constructors, not init() registration,
// so the set is a value anyone can read and nothing happens at import.
var faults = map[string]func() Fault{
	"client-pause":   func() Fault { return &ClientPause{} },
	"client-hang":    func() Fault { return &ClientHang{} },
	"client-crash":   func() Fault { return &ClientCrash{} },
	"client-clock":   func() Fault { return &ClientClock{} },
	"server-pause":   func() Fault { return &ServerPause{} },
	"server-isolate": func() Fault { return &ServerIsolate{} },
	"server-kill":    func() Fault { return &ServerKill{} },
	"server-restart": func() Fault { return &ServerRestart{} },
	"drop-replies":   func() Fault { return &DropReplies{} },
	"slow-replies":   func() Fault { return &SlowReplies{} },
	"partition":      func() Fault { return &Partition{} },
	"server-clock":   func() Fault { return &ServerClock{} },
	"failover":       func() Fault { return &Failover{} },
	"db-failover":    func() Fault { return &DBFailover{} },
}

// New returns a fresh fault of kind with zero options, ready for its options
// to be decoded into (it is a pointer to the fault's struct).
func New(kind string) (Fault, error) {
	mk, ok := faults[kind]
	if !ok {
		return nil, fmt.Errorf("unknown fault %q (known: %s)", kind, strings.Join(Kinds(), ", "))
	}
	return mk(), nil
}

// Kinds lists the fault names, sorted, for errors and `locklab list`.
func Kinds() []string {
	return slices.Sorted(maps.Keys(faults))
}

// Options lists the option names a fault takes (its yaml tags), in field
// order.
func Options(f Fault) []string {
	var out []string
	forOptions(f, func(name string, _ reflect.Value) { out = append(out, name) })
	return out
}

// Decode builds a fault of kind from its options in a scenario file: params
// is a mapping node (nil for no options). Unknown options are refused with
// their line, and the result is validated.
func Decode(kind string, params *yaml.Node) (Fault, error) {
	f, err := New(kind)
	if err != nil {
		return nil, err
	}
	if params != nil && !(params.Kind == yaml.ScalarNode && params.Tag == "!!null") {
		if params.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("line %d: options of %s: want a mapping", params.Line, kind)
		}
		known := Options(f)
		for i := 0; i < len(params.Content); i += 2 {
			k := params.Content[i]
			if !slices.Contains(known, k.Value) {
				opts := "none"
				if len(known) > 0 {
					opts = strings.Join(known, ", ")
				}
				return nil, fmt.Errorf("line %d: %s has no option %q (options: %s)", k.Line, kind, k.Value, opts)
			}
		}
		if err := params.Decode(f); err != nil {
			return nil, fmt.Errorf("options of %s: %w", kind, err)
		}
	}
	if err := f.Validate(); err != nil {
		line := 0
		if params != nil {
			line = params.Line
		}
		return nil, fmt.Errorf("line %d: %w", line, err)
	}
	return f, nil
}

// Params returns the options that are set, formatted as a scenario writes
// them ("latency": "200ms"), for nemesis events and reports.
func Params(f Fault) map[string]string {
	out := map[string]string{}
	forOptions(f, func(name string, v reflect.Value) {
		if !v.IsZero() {
			out[name] = fmt.Sprint(v.Interface())
		}
	})
	return out
}

// forOptions calls fn for every yaml-tagged field of f's struct.
func forOptions(f Fault, fn func(name string, v reflect.Value)) {
	v := reflect.Indirect(reflect.ValueOf(f))
	if v.Kind() != reflect.Struct {
		return
	}
	for i := 0; i < v.NumField(); i++ {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			fn(name, v.Field(i))
		}
	}
}
