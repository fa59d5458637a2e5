package cli

import (
	"io"
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
