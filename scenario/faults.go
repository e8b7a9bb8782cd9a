package scenario

import (
	"fmt"
	"github.com/locklab/locklab/yamlline"

	"gopkg.in/yaml.v3"

	"github.com/locklab/locklab/chaos"
)

// stepKeys are the keys of a faults entry that say where and when; every
// other key is an option of the fault itself, written inline
// (`{fault: slow-replies, latency: 200ms, ...}`) or under `params:`.
var stepKeys = map[string]bool{"fault": true, "target": true, "at": true, "every": true, "jitter": true,
	"random": true, "when": true, "for": true, "params": true}

// parseFault reads one entry of `faults:`.
func parseFault(n *yaml.Node, s *Scenario) (Fault, error) {
	if n.Kind != yaml.MappingNode {
		return Fault{}, fmt.Errorf("line %d: a fault is a mapping: {fault: NAME, target: {...}, at: 2s, for: 1s}", n.Line)
	}
	step := &yaml.Node{Kind: yaml.MappingNode, Line: n.Line}
	params := &yaml.Node{Kind: yaml.MappingNode, Line: n.Line}
	kind := ""
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case k.Value == "fault":
			kind = v.Value
		case k.Value == "params":
			if v.Kind != yaml.MappingNode {
				return Fault{}, fmt.Errorf("line %d: params is a mapping of the fault's options", v.Line)
			}
			params.Content = append(params.Content, v.Content...)
		case stepKeys[k.Value]:
			step.Content = append(step.Content, k, v)
		default:
			params.Content = append(params.Content, k, v)
		}
	}
	if kind == "" {
		return Fault{}, fmt.Errorf("line %d: fault: give its name (%s)", n.Line, joinKinds())
	}
	f, err := chaos.Decode(kind, params)
	if err != nil {
		return Fault{}, fmt.Errorf("line %d: %w", n.Line, err)
	}
	var st chaos.Step
	if err := step.Decode(&st); err != nil {
		return Fault{}, fmt.Errorf("line %d: %s: %w", n.Line, kind, yamlline.Err(err))
	}
	st.Fault = f
	if err := st.Validate(); err != nil {
		return Fault{}, fmt.Errorf("line %d: %s: %w", n.Line, kind, err)
	}
	if st.At.D() >= s.Duration {
		return Fault{}, fmt.Errorf("line %d: %s at %v: after the end of the run (duration %v)", n.Line, kind, st.At, s.Duration)
	}
	if _, err := chaos.Compile([]chaos.Step{st}, s.Seed, s.Duration); err != nil {
		return Fault{}, fmt.Errorf("line %d: %w", n.Line, err)
	}
	return Fault{Line: n.Line, Fault: f, Step: st}, nil
}

func joinKinds() string {
	out := ""
	for i, k := range chaos.Kinds() {
		if i > 0 {
			out += ", "
		}
		out += k
	}
	return out
}
