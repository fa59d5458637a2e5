package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/agui-relay/agui-relay/internal/load"
)

// jobManifest is what the load example's test reads of its objects.
type jobManifest struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		AccessModes    []string `json:"accessModes"`
		CompletionMode string   `json:"completionMode"`
		Completions    int      `json:"completions"`
		Parallelism    int      `json:"parallelism"`
		BackoffLimit   *int     `json:"backoffLimit"`
		// BackoffLimitPerIndex: an index that fails ends alone; with
		// backoffLimit the first failed pod ends the Job and the
		// controller terminates the pods still running.
		BackoffLimitPerIndex *int `json:"backoffLimitPerIndex"`
		Template             struct {
			Spec struct {
				RestartPolicy   string `json:"restartPolicy"`
				SecurityContext struct {
					FSGroup int `json:"fsGroup"`
				} `json:"securityContext"`
				Containers []struct {
					Args []string `json:"args"`
					Env  []struct {
						Name      string `json:"name"`
						ValueFrom struct {
							FieldRef struct {
								FieldPath string `json:"fieldPath"`
							} `json:"fieldRef"`
						} `json:"valueFrom"`
					} `json:"env"`
					VolumeMounts []struct {
						Name      string `json:"name"`
						MountPath string `json:"mountPath"`
					} `json:"volumeMounts"`
				} `json:"containers"`
				Volumes []struct {
					Name                  string `json:"name"`
					PersistentVolumeClaim struct {
						ClaimName string `json:"claimName"`
					} `json:"persistentVolumeClaim"`
				} `json:"volumes"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

func readJobManifests(t *testing.T, path string) map[string]jobManifest {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]jobManifest{}
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		j, err := yaml.YAMLToJSONStrict([]byte(doc))
		if err != nil {
			t.Fatalf("%s, document %d: %v", path, i, err)
		}
		var m jobManifest
		if err := json.Unmarshal(j, &m); err != nil || m.Kind == "" {
			t.Fatalf("%s, document %d: %v, kind %q", path, i, err, m.Kind)
		}
		out[m.Kind+"/"+m.Metadata.Name] = m
	}
	return out
}

// parsesAsHelp runs args with --help after them: the flags before it parse
// with the command's real flag set when the output is the help alone.
func parsesAsHelp(t *testing.T, args []string, cmd ...string) {
	t.Helper()
	var help, out strings.Builder
	run(append(slices.Clone(cmd), "--help"), nil, &help, io.Discard)
	if code := run(append(slices.Clone(args), "--help"), nil, &out, &out); code != 0 || out.String() != help.String() {
		first, _, _ := strings.Cut(out.String(), "\n")
		t.Errorf("%q does not parse: exit %d, %s", args, code, first)
	}
}

// The load example: an Indexed Job whose pods each run agui-relay load with
// --out in a directory of their own on a shared volume, by their index,
// and a Job that runs load report over exactly those directories. Both
// commands parse with the real flag sets, and the URL is the relay's
// Service of sidecar.yaml.
func TestKubernetesLoadExample(t *testing.T) {
	loadJobs := readJobManifests(t, "deploy/kubernetes/load.yaml")
	reportJobs := readJobManifests(t, "deploy/kubernetes/load-report.yaml")
	pvc, ok := loadJobs["PersistentVolumeClaim/agui-relay-load-results"]
	if !ok || !slices.Contains(pvc.Spec.AccessModes, "ReadWriteMany") {
		t.Fatalf("load.yaml: no ReadWriteMany claim agui-relay-load-results: %+v", pvc)
	}
	lj, ok := loadJobs["Job/agui-relay-load"]
	if !ok || len(loadJobs) != 2 {
		t.Fatalf("load.yaml: want the claim and Job agui-relay-load, got %v", slices.Collect(maps.Keys(loadJobs)))
	}
	rj, ok := reportJobs["Job/agui-relay-load-report"]
	if !ok || len(reportJobs) != 1 {
		t.Fatalf("load-report.yaml: want Job agui-relay-load-report, got %v", slices.Collect(maps.Keys(reportJobs)))
	}
	n := lj.Spec.Completions
	if lj.Spec.CompletionMode != "Indexed" || n < 2 || lj.Spec.Parallelism != n {
		t.Errorf("the load Job: completionMode %q, completions %d, parallelism %d: want Indexed, all pods at once", lj.Spec.CompletionMode, n, lj.Spec.Parallelism)
	}
	// mount returns the container's only argument list and where the
	// claim is mounted in it.
	mount := func(name string, j jobManifest) ([]string, string) {
		spec := j.Spec.Template.Spec
		// Each pod runs once. The load's pods are indexes of their own: one
		// whose load had a failed run (exit 1) must not have the Job
		// controller terminate the others mid-load, which backoffLimit 0
		// does; backoffLimitPerIndex 0 fails that index alone.
		once := j.Spec.BackoffLimit != nil && *j.Spec.BackoffLimit == 0 && j.Spec.BackoffLimitPerIndex == nil
		if j.Spec.CompletionMode == "Indexed" {
			once = j.Spec.BackoffLimitPerIndex != nil && *j.Spec.BackoffLimitPerIndex == 0 && j.Spec.BackoffLimit == nil
		}
		if len(spec.Containers) != 1 || spec.RestartPolicy != "Never" || !once || spec.SecurityContext.FSGroup != 65532 {
			t.Fatalf("%s: want one container, restartPolicy Never, backoffLimitPerIndex 0 when Indexed (backoffLimit 0 otherwise), fsGroup 65532 (the image's user): %+v", name, j.Spec)
		}
		c := spec.Containers[0]
		for _, m := range c.VolumeMounts {
			for _, v := range spec.Volumes {
				if v.Name == m.Name && v.PersistentVolumeClaim.ClaimName == pvc.Metadata.Name {
					return c.Args, m.MountPath
				}
			}
		}
		t.Fatalf("%s: the claim is not mounted", name)
		return nil, ""
	}

	// The load: --out in the directory of the pod's index.
	largs, lmount := mount("the load Job", lj)
	env := lj.Spec.Template.Spec.Containers[0].Env
	if len(env) != 1 || env[0].Name != "JOB_COMPLETION_INDEX" || env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("the load Job's env %+v: want JOB_COMPLETION_INDEX from the completion index annotation", env)
	}
	if len(largs) < 2 || largs[0] != "load" {
		t.Fatalf("the load Job's args %q", largs)
	}
	i := slices.Index(largs, "--out")
	if i < 0 || largs[i+1] != lmount+"/$(JOB_COMPLETION_INDEX)" {
		t.Errorf("the load Job's args %q: want --out %s/$(JOB_COMPLETION_INDEX)", largs, lmount)
	}
	var concrete []string
	for _, a := range largs {
		concrete = append(concrete, strings.ReplaceAll(a, "$(JOB_COMPLETION_INDEX)", "0"))
	}
	parsesAsHelp(t, concrete, "load")
	target := largs[len(largs)-1]
	if _, err := load.ParseTarget(target); err != nil {
		t.Errorf("the load Job's URL %q: %v", target, err)
	}
	// The URL is the Service of the sidecar example, on its port.
	u, _ := url.Parse(target)
	found := false
	for _, m := range readManifests(t, "deploy/kubernetes/sidecar.yaml") {
		if m.Kind == "Service" && m.Metadata.Name == u.Hostname() && len(m.Spec.Ports) > 0 && fmt.Sprint(m.Spec.Ports[0].Port) == cmp.Or(u.Port(), "80") {
			found = true
		}
	}
	if !found {
		t.Errorf("the load Job's URL %s is no Service port of sidecar.yaml", target)
	}

	// The report: exactly the directories of indexes 0 to n-1, on the same
	// claim, with --out beside them.
	rargs, rmount := mount("the report Job", rj)
	if len(rargs) < 3 || rargs[0] != "load" || rargs[1] != "report" {
		t.Fatalf("the report Job's args %q", rargs)
	}
	parsesAsHelp(t, rargs, "load", "report")
	var dirs []string
	out := ""
	for k := 2; k < len(rargs); k++ {
		switch rargs[k] {
		case "--out":
			out = rargs[k+1]
			k++
		case "--threshold":
			if _, err := parseThreshold(rargs[k+1]); err != nil {
				t.Error(err)
			}
			k++
		default:
			dirs = append(dirs, rargs[k])
		}
	}
	var want []string
	for k := range n {
		want = append(want, fmt.Sprintf("%s/%d", rmount, k))
	}
	if !slices.Equal(dirs, want) {
		t.Errorf("the report Job adds up %q, want the load Job's %q", dirs, want)
	}
	if filepath.Dir(out) != rmount || slices.Contains(dirs, out) {
		t.Errorf("the report Job's --out %q: want a directory of its own on the claim", out)
	}
	if rmount != lmount {
		t.Errorf("the Jobs mount the claim at %s and %s", lmount, rmount)
	}
}
