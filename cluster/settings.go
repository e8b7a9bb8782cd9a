package cluster

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/locklab/locklab/impls"
)

// Setting is something a scenario may set of how the servers of a kind
// run (`servers: {KIND: {NAME: VALUE}}`): its name and the values it
// takes, the first its default.
type Setting struct {
	Name   string
	Values []string
}

// Settings say how servers run where a plan asks for other than their
// kinds' defaults: KIND.NAME=VALUE pairs, sorted, joined by spaces, a
// setting at its default left out. A string, so that equal settings are
// equal values: cases that ask for the same servers share them.
type Settings string

// With is s with kind's setting name at value; the error, one line, says
// what the kind takes.
func (s Settings) With(kind impls.Server, name, value string) (Settings, error) {
	st, err := settingOf(kind, name)
	if err != nil {
		return s, err
	}
	if !slices.Contains(st.Values, value) {
		return s, fmt.Errorf("%s %q: want %s", name, value, orList(st.Values))
	}
	pairs := s.pairs()
	key := string(kind) + "." + name
	delete(pairs, key)
	if value != st.Values[0] {
		pairs[key] = value
	}
	out := make([]string, 0, len(pairs))
	for k, v := range pairs {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return Settings(strings.Join(out, " ")), nil
}

// Get is kind's setting name in s: its value, or the kind's default.
func (s Settings) Get(kind impls.Server, name string) string {
	if v, ok := s.pairs()[string(kind)+"."+name]; ok {
		return v
	}
	if st, err := settingOf(kind, name); err == nil {
		return st.Values[0]
	}
	return ""
}

// check says what in s no kind takes (settings not made by With).
func (s Settings) check() error {
	for key, v := range s.pairs() {
		kind, name, _ := strings.Cut(key, ".")
		if _, err := Settings("").With(impls.Server(kind), name, v); err != nil {
			return fmt.Errorf("server setting %s: %w", key, err)
		}
	}
	return nil
}

func (s Settings) pairs() map[string]string {
	out := map[string]string{}
	for _, p := range strings.Fields(string(s)) {
		k, v, _ := strings.Cut(p, "=")
		out[k] = v
	}
	return out
}

// settingOf is kind's setting name.
func settingOf(kind impls.Server, name string) (Setting, error) {
	k, err := KindOf(kind)
	if err != nil {
		return Setting{}, err
	}
	var names []string
	for _, st := range k.Settings {
		if st.Name == name {
			return st, nil
		}
		names = append(names, st.Name)
	}
	if len(names) == 0 {
		return Setting{}, fmt.Errorf("unknown key %q (%s servers take no settings)", name, kind)
	}
	return Setting{}, fmt.Errorf("unknown key %q (known: %s)", name, strings.Join(names, ", "))
}

// orList is "a, b or c".
func orList(vs []string) string {
	if len(vs) < 2 {
		return strings.Join(vs, "")
	}
	return strings.Join(vs[:len(vs)-1], ", ") + " or " + vs[len(vs)-1]
}
