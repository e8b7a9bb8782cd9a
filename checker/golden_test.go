package checker

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/locklab/locklab/history"
)

// Golden histories, one per class of verdict, in locklab's JSONL, Jepsen's
// EDN and Jepsen's JSON: each must come out exactly so. Every checker fix
// adds one.
func TestGoldenHistories(t *testing.T) {
	tests := []struct {
		file    string
		classes map[Class]int
		linear  LinStatus
	}{
		{"ok-lost-replies.jsonl", map[Class]int{}, "yes"},
		{"double-grant-both-valid.jsonl", map[Class]int{DoubleGrantBothValid: 1}, "no"},
		{"double-grant-outlived.jsonl", map[Class]int{DoubleGrantOutlived: 1}, "no"},
		{"revoked.jsonl", map[Class]int{DoubleGrantOutlived: 1, Revoked: 1}, "no"},
		{"phantom-release.jsonl", map[Class]int{PhantomRelease: 1}, "no"},
		{"crash-then-grant.jsonl", map[Class]int{}, "yes"},
		{"lost-update.jsonl", map[Class]int{LostUpdate: 1}, "yes"},
		// One renewal invoked after the release's ok and renewed (counted);
		// one in flight across the release, and one refused, are not.
		{"renewed-after-release.jsonl", map[Class]int{RenewedAfterRelease: 1}, "yes"},
		{"double-grant.edn", map[Class]int{DoubleGrantBothValid: 1}, "no"},
		{"ok-indeterminate.edn", map[Class]int{}, "yes"},
		{"ok.json", map[Class]int{}, "yes"},
		{"phantom-release.json", map[Class]int{PhantomRelease: 1}, "no"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", tt.file)
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			c := New(true)
			if err := history.ReadFileFormat(f, "", path, func(ev history.Event) error { c.Add(ev); return nil }); err != nil {
				t.Fatal(err)
			}
			v, err := c.Verdict(context.Background(), Options{HTMLDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(v.Classes, tt.classes) || v.Linearizable != tt.linear {
				t.Fatalf("classes %v, linearizable %s; want %v, %s\n%+v", v.Classes, v.Linearizable, tt.classes, tt.linear, v.Violations)
			}
			for _, x := range v.Violations {
				if x.Text == "" || len(x.Events) == 0 {
					t.Errorf("a violation without its words or events: %+v", x)
				}
			}
		})
	}
}
