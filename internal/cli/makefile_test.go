package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// make fuzz fuzzes every fuzz target of the module, each in the package
// it lives in: a target moved or added since shows here, not as a fuzz run
// that passes while fuzzing nothing.
func TestMakefileFuzzesEveryTarget(t *testing.T) {
	makefile, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	_, recipe, ok := strings.Cut(string(makefile), "\nfuzz:\n")
	if !ok {
		t.Fatal("the Makefile has no fuzz target")
	}
	recipe, _, _ = strings.Cut(recipe, "\n\n")
	recipe = strings.TrimRight(recipe, "\n")
	var listed []string
	line := regexp.MustCompile(`^\t\$\(GO\) test -run '\^\$\$' -fuzz '\^(Fuzz\w+)\$\$' -fuzztime \$\(FUZZTIME\) \./([\w/]+)/$`)
	for _, l := range strings.Split(recipe, "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("Makefile fuzz: a line that fuzzes no target: %q", l)
			continue
		}
		listed = append(listed, m[2]+"."+m[1])
	}

	var defined []string
	fuzzFunc := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(\w+ \*testing\.F\)`)
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "node_modules" || d.Name() == "testdata"):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, "_test.go"):
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllStringSubmatch(string(src), -1) {
			defined = append(defined, filepath.ToSlash(filepath.Dir(path))+"."+m[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(listed)
	slices.Sort(defined)
	if len(defined) == 0 || !slices.Equal(listed, defined) {
		t.Errorf("make fuzz fuzzes\n  %s\nthe fuzz targets of the module are\n  %s", strings.Join(listed, "\n  "), strings.Join(defined, "\n  "))
	}
}

// The README installs the binary with make build: the target builds
// ./agui-relay from the module's main package (and git ignores it).
func TestMakeBuildBuildsTheBinary(t *testing.T) {
	makefile, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(makefile), "\nbuild:\n\t$(GO) build -o agui-relay .\n") ||
		!regexp.MustCompile(`(?m)^\.PHONY:.* build( |$)`).Match(makefile) {
		t.Error("the Makefile has no phony build target running $(GO) build -o agui-relay .")
	}
	ignore, err := os.ReadFile(".gitignore")
	if err != nil || !slices.Contains(strings.Split(string(ignore), "\n"), "/agui-relay") {
		t.Errorf(".gitignore does not ignore /agui-relay: %v", err)
	}
}

// The suites that need more than Go (Node, Chromium) are behind the
// integration build tag, so go test ./... passes on a clone with Go alone;
// make test still runs them, with the tag, through conformance/run.sh and
// the browser target.
func TestIntegrationSuitesAreTagged(t *testing.T) {
	for _, dir := range []string{"conformance", "browser"} {
		tests, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if err != nil || len(tests) == 0 {
			t.Fatalf("%s: no test files (%v)", dir, err)
		}
		for _, f := range tests {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(src), "//go:build integration\n") {
				t.Errorf("%s does not begin with //go:build integration: go test ./... would run it", f)
			}
		}
	}
	makefile, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	run, err := os.ReadFile("conformance/run.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ where, text, want string }{
		{"the Makefile's browser target", recipe(string(makefile), "browser: browser-deps"), "$(GO) test -tags integration "},
		{"the Makefile's conformance target", recipe(string(makefile), "conformance: conformance-deps"), "./conformance/run.sh"},
		{"conformance/run.sh", string(run), "go test -tags integration "},
		{"the Makefile's test target", string(makefile), "\ntest: lint unit conformance browser\n"},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("%s does not run %q:\n%s", c.where, c.want, c.text)
		}
	}
}

// recipe returns the Makefile's rule that begins with the line head, up to
// the blank line after it ("" when there is none).
func recipe(makefile, head string) string {
	_, r, ok := strings.Cut(makefile, "\n"+head+"\n")
	if !ok {
		return ""
	}
	r, _, _ = strings.Cut(r, "\n\n")
	return head + "\n" + r
}
