package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The commands the README and docs show in their code blocks name files
// a reader has: shipped in the repository, or written by the same page
// before (cat > FILE). A page whose example names a file nobody ships
// sends its reader to an exit 2.
func TestDocsCommandsNameFilesThatExist(t *testing.T) {
	root := filepath.Join("..", "..")
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(root, "README.md"))
	command := regexp.MustCompile(`^(\$ )?(\./bin/)?locklab `)
	written := regexp.MustCompile(`cat > ?(\S+)`)
	named := regexp.MustCompile(`--approach-file (\S+)|\blocklab run (?:--\S+ (?:\S+ )?)*(\S+\.yaml)`)
	checked := 0
	for _, page := range pages {
		f, err := os.Open(page)
		if err != nil {
			t.Fatal(err)
		}
		made := map[string]bool{}
		inCode := false
		sc := bufio.NewScanner(f)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inCode = !inCode
				continue
			}
			if !inCode {
				continue
			}
			if m := written.FindStringSubmatch(line); m != nil {
				made[strings.Trim(m[1], `'"`)] = true
			}
			if !command.MatchString(line) {
				continue
			}
			for _, m := range named.FindAllStringSubmatch(line, -1) {
				file := m[1] + m[2]
				checked++
				if made[file] || placeholder(file) {
					continue
				}
				if _, err := os.Stat(filepath.Join(root, file)); err != nil {
					t.Errorf("%s line %d: %q names %s, which the repository does not ship and the page does not write before", filepath.Base(page), n, line, file)
				}
			}
		}
		f.Close()
	}
	if checked < 5 {
		t.Fatalf("only %d files named in the pages' commands: the pattern no longer reads them", checked)
	}
}

// placeholder reports whether a name stands for the reader's own file
// (FILE, SCENARIO.yaml, /tmp/BUG.yaml): no lower-case letter in its base.
func placeholder(file string) bool {
	base := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	return strings.ToUpper(base) == base
}
