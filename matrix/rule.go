package matrix

import "github.com/locklab/locklab/impls"

// RuleFor is the rule of fault's column that speaks for approach a, as the
// matrix picks it (most specific first), whether or not the column's
// scenario runs a: an approach the matrix was loaded without (one from a
// file) is judged by the rules its capabilities and weaknesses match.
func (m *Matrix) RuleFor(fault string, a impls.Approach) (Rule, bool) { return m.rule(fault, a) }
