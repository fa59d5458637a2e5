package cli

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// relayBinary returns the agui-relay binary under test: AGUI_RELAY_BIN, or
// one built from this module.
func relayBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("AGUI_RELAY_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "agui-relay")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building the relay: %v\n%s", err, out)
	}
	return bin
}

// heldProducer is a producer whose runs answer RUN_STARTED at once, then:
// the run whose runId is held RUN_FINISHED once release is closed, the run
// "slow" nothing until its request is cancelled, any other RUN_FINISHED.
func heldProducer(release <-chan struct{}, held string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var in struct{ RunID string }
		json.Unmarshal(b, &in)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"type":"RUN_STARTED","threadId":"t","runId":"`+in.RunID+`","protocolVersion":"1.0"}`+"\n\n")
		w.(http.Flusher).Flush()
		switch in.RunID {
		case held:
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		case "slow":
			<-r.Context().Done()
			return
		}
		io.WriteString(w, `data: {"type":"RUN_FINISHED","threadId":"t","runId":"`+in.RunID+`"}`+"\n\n")
	}))
}

// SIGTERM to the real process: readiness turns false while runs are still
// streaming, no new connection is accepted, a run that ends within the
// grace period ends as the producer ends it, one that does not is ended
// with a RUN_ERROR when the grace is over, and the process exits 0.
func TestSIGTERMDrainsThenEndsRuns(t *testing.T) {
	release := make(chan struct{})
	producer := heldProducer(release, "quick")
	defer producer.Close()
	defer producer.CloseClientConnections()

	const grace = 2 * time.Second
	cmd := exec.Command(relayBinary(t), "serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
		"--upstream", producer.URL, "--shutdown-grace", grace.String(), "--log-format", "json")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()

	var at struct{ Listen, Admin string }
	logs := bufio.NewScanner(stderr)
	for logs.Scan() {
		if strings.Contains(logs.Text(), "agui-relay listening") {
			json.Unmarshal(logs.Bytes(), &at)
			break
		}
	}
	if at.Listen == "" || at.Admin == "" {
		t.Fatalf("no listening line in the log: %v", logs.Err())
	}
	go io.Copy(io.Discard, stderr) // keep the relay's log flowing

	open := func(run string) *bufio.Reader {
		resp, err := http.Post("http://"+at.Listen+"/agent", "application/json",
			strings.NewReader(`{"threadId":"t","runId":"`+run+`","protocolVersion":"1.0","messages":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		br := bufio.NewReader(resp.Body)
		if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, "RUN_STARTED") {
			t.Fatalf("%s: first line %q, %v", run, line, err)
		}
		return br
	}
	quick, slow := open("quick"), open("slow")
	readyz := func() int {
		resp, err := http.Get("http://" + at.Admin + "/readyz")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := readyz(); code != 200 {
		t.Fatalf("/readyz %d before SIGTERM", code)
	}

	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for readyz() != 503 {
		if time.Since(sent) > grace/2 {
			t.Fatal("/readyz did not turn 503 while runs were in flight")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("/readyz 503 %v after SIGTERM", time.Since(sent).Round(time.Millisecond))
	for {
		c, err := net.DialTimeout("tcp", at.Listen, time.Second)
		if err != nil {
			break // refused: the relay accepts no new connection
		}
		c.Close()
		if time.Since(sent) > grace/2 {
			t.Fatal("the relay still accepts connections after SIGTERM")
		}
		time.Sleep(10 * time.Millisecond)
	}

	close(release) // "quick" finishes within the grace
	rest, err := io.ReadAll(quick)
	if err != nil || !strings.HasSuffix(string(rest), `{"type":"RUN_FINISHED","threadId":"t","runId":"quick"}`+"\n\n") || strings.Contains(string(rest), "RUN_ERROR") {
		t.Errorf("quick run after SIGTERM: %q, %v", rest, err)
	}
	rest, err = io.ReadAll(slow)
	ended := time.Since(sent)
	if err != nil || !strings.HasSuffix(string(rest), `{"type":"RUN_ERROR","message":"agui-relay: the relay is shutting down","code":"relay_shutdown"}`+"\n\n") {
		t.Errorf("slow run after SIGTERM: %q, %v", rest, err)
	}
	if ended < grace {
		t.Errorf("the slow run was ended %v after SIGTERM, before the grace of %v", ended, grace)
	}
	t.Logf("slow run ended with RUN_ERROR %v after SIGTERM (grace %v)", ended.Round(time.Millisecond), grace)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the relay exited with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the relay did not exit")
	}
}
