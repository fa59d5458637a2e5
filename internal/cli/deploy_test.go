package cli

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// Docker cannot run where the tests run, so these tests check what can be
// checked without it: the Dockerfile's build command really builds a static
// binary, its final stage is what the docs promise, and the Kubernetes
// examples are well-formed manifests whose relay arguments and routes the
// relay accepts.

func readDockerfile(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	// Join continuation lines.
	return strings.ReplaceAll(string(b), "\\\n", " ")
}

// shellWords splits a command line the way a shell splits a simple one:
// on blanks, with double quotes grouping.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	in, quoted := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, in = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

func TestDockerfileBuildsAStaticBinary(t *testing.T) {
	df := readDockerfile(t)
	m := regexp.MustCompile(`(?m)^RUN (CGO_ENABLED=0 go build .*)$`).FindStringSubmatch(df)
	if m == nil {
		t.Fatal("the Dockerfile has no RUN CGO_ENABLED=0 go build line")
	}
	words := shellWords(m[1])
	want := []string{"CGO_ENABLED=0", "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", "/out/agui-relay", "."}
	if strings.Join(words, "|") != strings.Join(want, "|") {
		t.Fatalf("build command %q, want %q", words, want)
	}
	// Run that very command, writing the binary into a temporary folder.
	bin := filepath.Join(t.TempDir(), "agui-relay")
	args := append([]string(nil), words[2:]...)
	args[len(args)-2] = bin
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), words[0])
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary is dynamically linked (%v): it would not run on distroless/static", p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs %v", libs)
	}
	if f.Section(".symtab") != nil {
		t.Error(`the binary has a symbol table: -ldflags "-s -w" did not apply`)
	}
	// -trimpath: no path of this machine in the binary.
	wd, _ := os.Getwd()
	if b, _ := os.ReadFile(bin); bytes.Contains(b, []byte(wd)) {
		t.Errorf("the binary contains the build path %s: -trimpath did not apply", wd)
	}
	// And it runs: --help documents the flags.
	out, err := exec.Command(bin, "serve", "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "-config") {
		t.Errorf("%s serve --help: %v\n%s", bin, err, out)
	}
}

func TestDockerfileFinalStage(t *testing.T) {
	df := readDockerfile(t)
	stages := regexp.MustCompile(`(?m)^FROM `).Split(df, -1)
	final := stages[len(stages)-1]
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`^(gcr\.io/distroless/static\S*|scratch)\s`),
		regexp.MustCompile(`(?m)^COPY --from=build /out/agui-relay /agui-relay$`),
		regexp.MustCompile(`(?m)^USER (nonroot|65532)`),
		regexp.MustCompile(`(?m)^EXPOSE 8080 9090$`),
		regexp.MustCompile(`(?m)^ENTRYPOINT \["/agui-relay"\]$`),
		regexp.MustCompile(`AGUI_RELAY_LISTEN=0\.0\.0\.0:8080\b`),
		regexp.MustCompile(`AGUI_RELAY_ADMIN_LISTEN=0\.0\.0\.0:9090\b`),
	} {
		if !want.MatchString(final) {
			t.Errorf("the final stage lacks %s:\n%s", want, final)
		}
	}
	if !regexp.MustCompile(`(?m)^FROM golang:1\.26\b`).MatchString(df) {
		t.Error("the build stage is not golang:1.26 (go.mod's go line)")
	}
	// The ENV lines are serve flags the relay reads.
	env := map[string]string{}
	for _, m := range regexp.MustCompile(`(AGUI_RELAY_[A-Z_]+)=(\S+)`).FindAllStringSubmatch(final, -1) {
		env[m[1]] = m[2]
	}
	c, err := parseServe(nil, func(k string) string { return env[k] }, io.Discard)
	if err != nil || c.listen != "0.0.0.0:8080" || c.adminListen != "0.0.0.0:9090" {
		t.Errorf("the image's environment: %v, %+v", err, c)
	}
	// The build context keeps what the build needs.
	ignore, err := os.ReadFile(".dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(ignore), "\n") {
		switch strings.TrimSpace(line) {
		case "testdata", "internal", "internal/demo/recordings", "go.mod", "go.sum", "relay", "translate", "negotiate", "rules", "*.go":
			t.Errorf(".dockerignore leaves %q out of the build context; the binary needs it", line)
		}
	}
}

// manifest is what the tests read of a Kubernetes object.
type manifest struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Data map[string]string `json:"data"`
	Spec struct {
		// Deployment
		Replicas *int `json:"replicas"`
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Template struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				TerminationGracePeriodSeconds int         `json:"terminationGracePeriodSeconds"`
				Containers                    []container `json:"containers"`
				Volumes                       []struct {
					Name      string `json:"name"`
					ConfigMap *struct {
						Name string `json:"name"`
					} `json:"configMap"`
				} `json:"volumes"`
			} `json:"spec"`
		} `json:"template"`
		// Service
		Ports []struct {
			Name       string          `json:"name"`
			Port       int             `json:"port"`
			TargetPort json.RawMessage `json:"targetPort"`
		} `json:"ports"`
	} `json:"spec"`
}

type container struct {
	Name  string   `json:"name"`
	Image string   `json:"image"`
	Args  []string `json:"args"`
	Ports []struct {
		Name          string `json:"name"`
		ContainerPort int    `json:"containerPort"`
	} `json:"ports"`
	LivenessProbe, ReadinessProbe *struct {
		HTTPGet *struct {
			Path string          `json:"path"`
			Port json.RawMessage `json:"port"`
		} `json:"httpGet"`
	}
	Lifecycle *struct {
		PreStop *struct {
			Sleep *struct {
				Seconds int `json:"seconds"`
			} `json:"sleep"`
		} `json:"preStop"`
	} `json:"lifecycle"`
	Resources struct {
		Requests map[string]string `json:"requests"`
		Limits   map[string]string `json:"limits"`
	} `json:"resources"`
	VolumeMounts []struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
	} `json:"volumeMounts"`
}

func (c *container) port(name string) int {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

// readManifests parses every document of a multi-document YAML file,
// strictly (a key given twice is an error).
func readManifests(t *testing.T, path string) []manifest {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []manifest
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		j, err := yaml.YAMLToJSONStrict([]byte(doc))
		if err != nil {
			t.Fatalf("%s, document %d: %v", path, i, err)
		}
		var m manifest
		if err := json.Unmarshal(j, &m); err != nil {
			t.Fatalf("%s, document %d: %v", path, i, err)
		}
		if m.Kind == "" {
			t.Fatalf("%s, document %d: no kind", path, i)
		}
		out = append(out, m)
	}
	return out
}

func TestKubernetesExamples(t *testing.T) {
	paths, _ := filepath.Glob("deploy/kubernetes/*.yaml")
	if len(paths) < 2 {
		t.Fatalf("examples: %v", paths)
	}
	for _, path := range paths {
		if strings.HasPrefix(filepath.Base(path), "load") {
			continue // the load's Jobs: TestKubernetesLoadExample
		}
		docs := readManifests(t, path)
		configMaps := map[string]map[string]string{}
		for _, m := range docs {
			if m.Kind == "ConfigMap" {
				configMaps[m.Metadata.Name] = m.Data
			}
		}
		var relays int
		for _, d := range docs {
			if d.Kind != "Deployment" {
				continue
			}
			pod := d.Spec.Template
			for k, v := range d.Spec.Selector.MatchLabels {
				if pod.Metadata.Labels[k] != v {
					t.Errorf("%s %s: the selector does not match the pod's labels", path, d.Metadata.Name)
				}
			}
			var relay *container
			agentPorts := map[int]bool{}
			for i := range pod.Spec.Containers {
				c := &pod.Spec.Containers[i]
				if c.Name == "agui-relay" {
					relay = c
					continue
				}
				for _, p := range c.Ports {
					agentPorts[p.ContainerPort] = true
				}
			}
			if relay == nil {
				t.Errorf("%s %s: no agui-relay container", path, d.Metadata.Name)
				continue
			}
			relays++
			checkRelayContainer(t, path, relay, pod.Spec.TerminationGracePeriodSeconds, agentPorts, configMaps, pod.Spec.Volumes)
			// Services send their ports to ports the pod names.
			for _, s := range docs {
				if s.Kind != "Service" || s.Metadata.Name != d.Metadata.Name && s.Metadata.Name != "agui-relay" {
					continue
				}
				for _, p := range s.Spec.Ports {
					var name string
					if json.Unmarshal(p.TargetPort, &name) != nil || relay.port(name) == 0 {
						t.Errorf("%s Service %s: port %s targets %s, not a named port of the relay", path, s.Metadata.Name, p.Name, p.TargetPort)
					}
				}
				if len(s.Spec.Ports) == 0 || string(s.Spec.Ports[0].TargetPort) != `"relay"` {
					t.Errorf("%s Service %s: its first port does not go to the relay", path, s.Metadata.Name)
				}
			}
		}
		if relays == 0 {
			t.Errorf("%s: no Deployment with the relay", path)
		}
	}
}

func checkRelayContainer(t *testing.T, path string, c *container, graceSeconds int, agentPorts map[int]bool, configMaps map[string]map[string]string, volumes []struct {
	Name      string `json:"name"`
	ConfigMap *struct {
		Name string `json:"name"`
	} `json:"configMap"`
}) {
	t.Helper()
	if c.port("relay") != 8080 || c.port("admin") != 9090 {
		t.Errorf("%s: relay ports %+v, want relay 8080 and admin 9090", path, c.Ports)
	}
	for _, p := range []struct {
		name  string
		probe *struct {
			HTTPGet *struct {
				Path string          `json:"path"`
				Port json.RawMessage `json:"port"`
			} `json:"httpGet"`
		}
		path string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || string(p.probe.HTTPGet.Port) != `"admin"` {
			t.Errorf("%s: the %s probe is not GET %s on the admin port", path, p.name, p.path)
		}
	}
	if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" || c.Resources.Limits["memory"] == "" {
		t.Errorf("%s: resources %+v: want cpu and memory requests and a memory limit", path, c.Resources)
	}

	// The arguments are serve flags the relay accepts; a --config names a
	// file mounted from a ConfigMap of the same manifest, whose routes load.
	args := append([]string(nil), c.Args...)
	for i, a := range args {
		file, ok := strings.CutPrefix(a, "--config=")
		if !ok {
			continue
		}
		var data string
		for _, m := range c.VolumeMounts {
			rel, ok := strings.CutPrefix(file, m.MountPath+"/")
			if !ok {
				continue
			}
			for _, v := range volumes {
				if v.Name == m.Name && v.ConfigMap != nil {
					data = configMaps[v.ConfigMap.Name][rel]
				}
			}
		}
		if data == "" {
			t.Fatalf("%s: %s is not a key of a ConfigMap mounted there", path, a)
		}
		tmp := filepath.Join(t.TempDir(), "routes.yaml")
		os.WriteFile(tmp, []byte(data), 0o600)
		args[i] = "--config=" + tmp
	}
	cfg, err := parseServe(args, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatalf("%s: the relay's args %q: %v", path, c.Args, err)
	}
	if cfg.listen != "0.0.0.0:8080" || cfg.adminListen != "0.0.0.0:9090" {
		t.Errorf("%s: listens on %s and %s, want 0.0.0.0:8080 and 0.0.0.0:9090", path, cfg.listen, cfg.adminListen)
	}
	if cfg.config == "" {
		// A sidecar: the agent is in the same pod, on localhost.
		u, err := url.Parse(cfg.upstream)
		if err != nil || u.Hostname() != "127.0.0.1" {
			t.Errorf("%s: --upstream %q, want the agent on 127.0.0.1", path, cfg.upstream)
		} else if port := u.Port(); !agentPorts[atoi(port)] {
			t.Errorf("%s: --upstream port %s is no port of the agent container (%v)", path, port, agentPorts)
		}
	} else if len(cfg.routes) < 2 {
		t.Errorf("%s: the example routes file has %d routes", path, len(cfg.routes))
	}
	preStop := 0
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
		preStop = c.Lifecycle.PreStop.Sleep.Seconds
	}
	if need := cfg.shutdownGrace + time.Duration(preStop)*time.Second; time.Duration(graceSeconds)*time.Second <= need {
		t.Errorf("%s: terminationGracePeriodSeconds %d leaves no margin over the shutdown grace and preStop pause (%s)", path, graceSeconds, need)
	}
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n
}
