package cli

import (
	"encoding/json"
	"io"
	"net"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// An AGUI_RELAY_ variable that sets no serve flag is named at start with the
// nearest name that does: AGUI_RELAY_UPSTREM would otherwise start the
// demo agent without a word. Known variables and other prefixes pass.
func TestUnknownEnvIsNamedWithTheNearest(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	environ := []string{
		"AGUI_RELAY_UPSTREM=http://agent:8000",
		"AGUI_RELAY_LISTEN=0.0.0.0:8080",
		"AGUI_RELAY_ADMIN_LISTN=0.0.0.0:9090",
		"AGUI_RELAY_UPSTREAM_MAX_CONNS=8",
		"AGUI_RELAYUPSTREAM=x", // another prefix: not the relay's
		"PATH=/bin",
		"AGUI_RELAY_=",
	}
	warnUnknownEnv(zap.New(core), environ, serveFlags(&serveConfig{}, io.Discard))
	want := map[string]string{
		"AGUI_RELAY_UPSTREM":     "AGUI_RELAY_UPSTREAM",
		"AGUI_RELAY_ADMIN_LISTN": "AGUI_RELAY_ADMIN_LISTEN",
		"AGUI_RELAY_":            "",
	}
	got := map[string]string{}
	for _, e := range logs.All() {
		f := e.ContextMap()
		got[f["variable"].(string)] = f["nearest"].(string)
		if e.Level != zapcore.WarnLevel {
			t.Errorf("%s: level %v, want warn", f["variable"], e.Level)
		}
	}
	for name, nearest := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("%s not named; logged %v", name, got)
		} else if nearest != "" && got[name] != nearest {
			t.Errorf("%s: nearest %s, want %s", name, got[name], nearest)
		}
	}
	if len(got) != len(want) {
		t.Errorf("named %v, want only %v", got, want)
	}
	if e := logs.FilterField(zap.String("variable", "AGUI_RELAY_UPSTREM")).All(); len(e) != 1 ||
		e[0].Message != "environment variable AGUI_RELAY_UPSTREM sets no flag; did you mean AGUI_RELAY_UPSTREAM?" {
		t.Errorf("the warning reads %v", e)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"", "abc", 3}, {"UPSTREM", "UPSTREAM", 1}, {"kitten", "sitting", 3}, {"LISTEN", "LISTEN", 0}, {"AB", "BA", 2}} {
		if d := editDistance(tc.a, tc.b); d != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
		if d := editDistance(tc.b, tc.a); d != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.b, tc.a, d, tc.d)
		}
	}
}

// serve names the variable at start, in its log, before anything can fail:
// here the address it is to listen on is taken, so it stops right after.
func TestServeWarnsOfAnUnknownVariableAtStart(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	t.Setenv("AGUI_RELAY_UPSTREM", "http://agent:8000")
	var out, errb strings.Builder
	code := run([]string{"serve", "--listen", taken.Addr().String(), "--admin-listen", "127.0.0.1:0", "--log-format", "json"}, nil, &out, &errb)
	first, _, _ := strings.Cut(errb.String(), "\n")
	var line struct{ Level, Msg, Variable, Nearest string }
	if err := json.Unmarshal([]byte(first), &line); err != nil || code != 1 || line.Level != "warn" ||
		line.Variable != "AGUI_RELAY_UPSTREM" || line.Nearest != "AGUI_RELAY_UPSTREAM" {
		t.Errorf("exit %d, first log line %s (%v)", code, first, err)
	}
}
