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
