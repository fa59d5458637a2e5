package load_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/internal/load"
)

// results.json says judge_every "auto", and reads back as it was.
func TestResultJSONSaysJudgeEveryAuto(t *testing.T) {
	for _, every := range []int{load.JudgeAuto, 0, 3} {
		in := load.Result{URL: "http://a/", Runs: 2, Unfinished: 1, JudgeEvery: every}
		b, err := json.Marshal(&in)
		if err != nil {
			t.Fatal(err)
		}
		want := `"judge_every":` + strconv.Itoa(every)
		if every == load.JudgeAuto {
			want = `"judge_every":"auto"`
		}
		if !strings.Contains(string(b), want) || !strings.Contains(string(b), `"unfinished":1`) {
			t.Errorf("%s, want %s", b, want)
		}
		var out load.Result
		if err := json.Unmarshal(b, &out); err != nil || out.JudgeEvery != every || out.Runs != 2 || out.URL != "http://a/" {
			t.Errorf("%s read back as %+v, %v", b, out, err)
		}
	}
}

// The demo agent's synthetic scenario sends exactly events=N events, RUN_STARTED
// and RUN_FINISHED included, each run complete and well formed.
func TestSyntheticEventsAreExact(t *testing.T) {
	base := startDemo(t)
	for _, n := range []int{3, 5, 100} {
		res := run(t, load.Config{URL: base + "/agent?scenario=synthetic&events=" + strconv.Itoa(n), Concurrency: 1, Runs: 2})
		if res.Events != int64(2*n) || res.Complete != 2 || res.Malformed != 0 || len(res.Errors) != 0 {
			t.Errorf("events=%d: %d events in 2 runs, %d complete, %d malformed, errors %v %v", n, res.Events, res.Complete, res.Malformed, res.Errors, res.Examples)
		}
	}
}
