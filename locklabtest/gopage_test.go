package locklabtest_test

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/impls"
)

// goPage is the page a user writes their lock and its test from.
const goPage = "../docs/go-api.md"

// pageFiles are the files docs/go-api.md marks for a user's module: a
// `<!-- file: PATH -->` line, then a fenced block, its content.
func pageFiles(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(goPage)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	marker := regexp.MustCompile(`^<!-- file: (\S+) -->$`)
	files := map[string]string{}
	var path string
	var body []string
	inBlock := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case inBlock && strings.HasPrefix(line, "```"):
			files[path] = strings.Join(body, "\n") + "\n"
			path, body, inBlock = "", nil, false
		case inBlock:
			body = append(body, line)
		case path != "" && strings.HasPrefix(line, "```"):
			inBlock = true
		case path != "" && strings.TrimSpace(line) != "":
			t.Fatalf("%s:%d: the file marker for %s is not followed by a code block", goPage, n, path)
		default:
			if m := marker.FindStringSubmatch(line); m != nil {
				if _, dup := files[m[1]]; dup {
					t.Fatalf("%s:%d: %s marked twice", goPage, n, m[1])
				}
				path = m[1]
			}
		}
	}
	if inBlock || path != "" {
		t.Fatalf("%s: the block of %s never ends", goPage, path)
	}
	return files
}

// The page carries a whole module (go.mod, a lock, its test and its
// scenario) and names the whole contract: every method of impls.Locker and
// impls.Lease, every outcome error and every helper of package impls. A
// method, error or helper added to impls and not to the page fails here.
func TestGoPageNamesTheWholeContract(t *testing.T) {
	files := pageFiles(t)
	for _, want := range []string{"go.mod", "mylock.go", "mylock_test.go", "testdata/gc-pause.yaml"} {
		if files[want] == "" {
			t.Errorf("%s marks no %s (have %v)", goPage, want, slices.Sorted(maps.Keys(files)))
		}
	}
	page, err := os.ReadFile(goPage)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, typ := range []reflect.Type{reflect.TypeFor[impls.Locker](), reflect.TypeFor[impls.Lease]()} {
		for i := range typ.NumMethod() {
			names = append(names, "**`"+typ.Method(i).Name+"`**")
		}
	}
	for _, name := range exportedOf(t, "../impls/locker.go", "../impls/wait.go") {
		names = append(names, "`impls."+name)
	}
	for _, name := range names {
		if !strings.Contains(string(page), name) {
			t.Errorf("%s does not name %s", goPage, strings.Trim(name, "*`"))
		}
	}
}

// exportedOf lists the exported package-level variables and functions
// (not methods) of Go files.
func exportedOf(t *testing.T, paths ...string) []string {
	t.Helper()
	var out []string
	for _, path := range paths {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					out = append(out, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if v, ok := s.(*ast.ValueSpec); ok && d.Tok == token.VAR {
						for _, n := range v.Names {
							if n.IsExported() {
								out = append(out, n.Name)
							}
						}
					}
				}
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("found only %v in %v: the parse went wrong", out, paths)
	}
	return out
}

// The page's module, written out as a user would (its files, its go.mod
// with the replace pointed at this checkout), passes `go vet` and
// `go test` against a real Redis: the conformance suite and the scenario.
// Its go.mod, tidied, requires no container engine and no telemetry.
func TestGoPageIsAModuleThatPasses(t *testing.T) {
	files := pageFiles(t)
	checkout, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	replace := regexp.MustCompile(`(?m)^replace github.com/locklab/locklab => .*$`)
	if !replace.MatchString(files["go.mod"]) {
		t.Fatalf("the page's go.mod has no replace of github.com/locklab/locklab:\n%s", files["go.mod"])
	}
	files["go.mod"] = replace.ReplaceAllString(files["go.mod"], "replace github.com/locklab/locklab => "+checkout)
	for path, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The checksums of locklab's requirements, which a user's go mod tidy
	// fetches from the checksum database: the same lines.
	sums, err := os.ReadFile(filepath.Join(checkout, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sums, 0o644); err != nil {
		t.Fatal(err)
	}
	gocmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s in the page's module: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	gocmd("mod", "tidy")
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	indirect := strings.Count(string(gomod), "// indirect")
	for _, mod := range []string{"testcontainers", "github.com/moby/", "github.com/docker/", "github.com/containerd/", "go.opentelemetry.io/",
		"github.com/prometheus/"} {
		if strings.Contains(string(gomod), mod) {
			t.Errorf("the page's module requires %s (go.mod after go mod tidy):\n%s", mod, gomod)
		}
	}
	t.Logf("the page's go.mod after go mod tidy: %d indirect requires", indirect)
	gocmd("vet", "./...")
	out := gocmd("test", "-count=1", "-v", "./...")
	for _, want := range []string{"--- PASS: TestMyLock ", "--- PASS: TestMyLockUnderGCPause", "--- PASS: TestMyLock/MutualExclusion"} {
		if !strings.Contains(out, want) {
			t.Errorf("the page's go test passed without %q:\n%s", want, out)
		}
	}
	t.Logf("the page's go test:\n%s", lastLines(out, 40))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
