package cluster

import "testing"

func TestTailOf(t *testing.T) {
	for _, tt := range []struct{ log, want string }{
		{"a\nb\n", "a | b"},
		{"a\nb\nc\nd\n", "b | c | d"},
		{"x ERROR first\ny\nz ERROR second\nb\nc\nd\n", "first error: x ERROR first | ... | b | c | d"},
		{"a\nb ERROR in the tail\nc\n", "a | b ERROR in the tail | c"},
		{"2026 ERROR listening\njava.net.BindException: in use\n\tat x\nb\nc\nd\n", "first error: 2026 ERROR listening | java.net.BindException: in use | ... | b | c | d"},
		{"2026 ERROR alone\n2026 INFO next\nb\nc\nd\n", "first error: 2026 ERROR alone | ... | b | c | d"},
	} {
		if got := tailOf(tt.log, 3); got != tt.want {
			t.Errorf("tailOf(%q) = %q; want %q", tt.log, got, tt.want)
		}
	}
}
