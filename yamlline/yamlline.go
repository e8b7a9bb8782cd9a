// Package yamlline makes the errors of locklab's YAML files (scenarios,
// approach files) one line that names the line of the file.
package yamlline

import (
	"errors"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

var unknownField = regexp.MustCompile(`field (\S+) not found in type \S+`)

// KeyLine is the line of key in a mapping node, or the mapping's own line.
func KeyLine(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i].Line
		}
	}
	return m.Line
}

// Err keeps yaml's "line N: ..." and drops its "yaml: " prefix and Go
// type names: an unknown key is called one.
func Err(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = unknownField.ReplaceAllString(msg, `unknown key "$1"`)
	msg = strings.ReplaceAll(msg, "unmarshal errors:\n  ", "")
	msg = strings.ReplaceAll(msg, "\n  ", "; ")
	return errors.New(msg)
}
