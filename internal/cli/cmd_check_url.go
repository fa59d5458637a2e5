package cli

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/agui-relay/agui-relay/event"
	"github.com/agui-relay/agui-relay/internal/load"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/relay"
	"github.com/agui-relay/agui-relay/rules"
)

// maxCheckStream caps the stream check --url reads from a live agent.
const maxCheckStream = 64 << 20

// liveRun posts input to url and returns the response's event stream,
// decoded as the relay decodes it (a gzip Content-Encoding; another one is
// an error). A stream that breaks off returns what arrived and the error;
// a response that is no event stream, or none at all, only the error.
func liveRun(url string, o liveOptions, input []byte) ([]byte, load.Response, error) {
	got, resp, err := liveBody(url, o, input)
	if got == nil || resp.ContentEncoding == "" {
		return got, resp, err
	}
	gz, readable := relay.ContentCoding([]byte(resp.ContentEncoding))
	if !readable {
		return nil, resp, fmt.Errorf("the response's Content-Encoding is %q: check, like the relay, decodes only gzip (the relay passes this response on as it is, untranslated)", resp.ContentEncoding)
	}
	if !gz {
		return got, resp, err
	}
	decoded, derr := gunzipAll(got)
	if err == nil {
		err = derr
	}
	if len(decoded) == 0 && derr != nil {
		return nil, resp, err
	}
	return decoded, resp, err
}

// gunzipAll decodes a gzip body read whole, up to maxCheckStream bytes. A
// body cut inside the gzip returns what it decoded, with the error.
func gunzipAll(body []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("the gzip response: %w", err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, maxCheckStream+1))
	switch {
	case len(out) > maxCheckStream:
		return out[:maxCheckStream], fmt.Errorf("the stream is larger than %d MiB decoded: judged what came before", maxCheckStream>>20)
	case err != nil:
		return out, fmt.Errorf("the gzip response breaks off: %w", err)
	}
	return out, nil
}

// liveBody posts input to url and returns the response's body as it came.
func liveBody(url string, o liveOptions, input []byte) ([]byte, load.Response, error) {
	c, err := load.NewClient(url, o.headers, o.timeouts)
	if err != nil {
		return nil, load.Response{}, err
	}
	if o.insecure {
		c.SetTLS(&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // asked for by --insecure
	}
	defer c.Close()
	var got []byte
	var resp load.Response
	over := false
	err = c.Run(context.Background(), input, func(r load.Response) { resp = r }, func(p []byte) {
		if len(got)+len(p) > maxCheckStream {
			if !over {
				over = true
				c.Close()
			}
			return
		}
		got = append(got, p...)
	})
	if over {
		return got, resp, fmt.Errorf("the stream is larger than %d MiB: judged what came before", maxCheckStream>>20)
	}
	var le *load.Error
	if errors.As(err, &le) && (le.Kind == load.KindBroken || strings.HasPrefix(le.Kind, "timeout")) && len(got) > 0 {
		return got, resp, err
	}
	if err != nil {
		return nil, resp, err
	}
	return got, resp, nil
}

// streamEvents returns the data of every frame of an SSE stream.
func streamEvents(sse []byte) ([][]byte, error) {
	sc := event.NewScanner(bytes.NewReader(sse), 0)
	var evs [][]byte
	for {
		f, err := sc.Next()
		if err == io.EOF {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		if f.HasData() {
			evs = append(evs, bytes.Clone(f.Data))
		}
	}
}

// consumerRow is one row of the table: a profile of releases, or a UI stack
// by the client it bundles.
type consumerRow struct {
	name     string
	releases []negotiate.Version
}

// consumerRows lists every consumer profile the relay knows, then the UI
// stacks of negotiate.Consumers.
func consumerRows() []consumerRow {
	var rows []consumerRow
	for _, p := range negotiate.Profiles {
		rows = append(rows, consumerRow{name: p.Name, releases: p.Releases()})
	}
	for _, c := range negotiate.Consumers {
		rows = append(rows, consumerRow{name: c.Name, releases: []negotiate.Version{c.Client}})
	}
	return rows
}

func (r consumerRow) span() string {
	first, last := r.releases[0], r.releases[len(r.releases)-1]
	if first == last {
		return first.String()
	}
	return first.String() + "–" + last.String()
}

// firstFatal returns the first thing in events that a consumer of v fails
// the run on ("" when it reads them all): a finding, with its JSON pointer,
// or a sequence fault.
func firstFatal(v negotiate.Version, events [][]byte, now time.Time) string {
	c := checker{v: v, now: now}
	st := rules.NewStream(v)
	for i, ev := range events {
		for _, f := range rules.JudgeEvent(v, ev).Findings {
			if w := c.findingWord(f); w >= wRejected {
				ptr := f.Pointer
				if ptr == "" {
					ptr = "(whole)"
				}
				return fmt.Sprintf("#%d %s %s: %s %s", i, eventType(ev), ptr, words[w], f.Rule)
			}
		}
		if fs := st.Next(ev); len(fs) > 0 {
			return fmt.Sprintf("#%d %s: %s", i, eventType(ev), fs[0].Rule)
		}
	}
	return ""
}

// reading is what a row's consumers make of a stream.
type reading struct {
	ok    bool
	first string // the first fatal finding, of the first release that fails
}

func (r reading) String() string {
	if r.ok {
		return "yes"
	}
	return "no: " + r.first
}

// readAll judges the stream for every release of a row, directly and as
// the relay translates it for that release.
func readAll(row consumerRow, sse []byte, events [][]byte, now time.Time) (direct, through reading, served bool, why string) {
	direct, through = reading{ok: true}, reading{ok: true}
	served = true
	tr := &event.Translator{Now: func() time.Time { return now }}
	for _, v := range row.releases {
		tag := ""
		if len(row.releases) > 1 {
			tag = v.String() + " "
		}
		if f := firstFatal(v, events, now); f != "" && direct.ok {
			direct = reading{first: tag + f}
		}
		if ok, w := negotiate.Supported(v); !ok {
			served, why = false, w
			continue
		}
		var out bytes.Buffer
		st := tr.NewStream(v, negotiate.Version{}, &out)
		sc := event.NewScanner(bytes.NewReader(sse), 0)
		for {
			f, err := sc.Next()
			if err != nil {
				break
			}
			if st.Frame(&f) != nil {
				break
			}
		}
		st.Close()
		evs, _ := streamEvents(out.Bytes())
		if f := firstFatal(v, evs, now); f != "" && through.ok {
			through = reading{first: tag + f}
		}
	}
	return direct, through, served, why
}

// declaredVersion says what the producer declared on its first RUN_STARTED.
func declaredVersion(events [][]byte) string {
	for _, ev := range events {
		if string(rules.PeekType(ev)) != "RUN_STARTED" {
			continue
		}
		pv := gjson.GetBytes(ev, "protocolVersion")
		if pv.Type == gjson.String {
			return fmt.Sprintf("%q", pv.String())
		}
		return "none (a producer from before the field: 0.0.x)"
	}
	return "unknown: no RUN_STARTED"
}

// profilesTable prints the producer's declared version and faults, then
// one row per consumer; it reports whether the stream ends with a terminal
// event and every served consumer reads it through the relay, and returns
// the run's verdict as agui-relay load reaches it and the number of faults
// it printed.
func profilesTable(w io.Writer, sse []byte, now time.Time) (all bool, run *load.RunJudge, faults int, err error) {
	events, err := streamEvents(sse)
	if err != nil {
		return false, nil, 0, err
	}
	fmt.Fprintf(w, "producer: %d events; protocolVersion declared: %s\n", len(events), declaredVersion(events))
	c := checker{v: negotiate.Current, out: w, now: now}
	run = load.NewRunJudge() // the verdict agui-relay load reaches on this stream
	for i, ev := range events {
		j := rules.JudgeEvent(negotiate.Current, ev)
		var bad []rules.Finding
		for _, f := range j.Findings {
			if f.Verdict == rules.Malformed {
				bad = append(bad, f)
			}
		}
		_, sf := run.Next(ev)
		if len(bad) == 0 && len(sf) == 0 {
			continue
		}
		if faults == 0 {
			fmt.Fprintln(w, "producer faults (by the 1.0 rules):")
		}
		faults += len(bad) + len(sf)
		fmt.Fprintf(w, "#%d %s:\n", i, eventType(ev))
		c.findings(ev, rules.Judgement{Verdict: rules.Malformed, Findings: bad})
		for _, f := range sf {
			fmt.Fprintf(w, "  stream: %s: %s\n", f.Rule, f.Detail)
			if f.Hint != "" {
				fmt.Fprintf(w, "    hint: %s\n", f.Hint)
			}
		}
	}
	if run.Terminal() == "" {
		if faults == 0 {
			fmt.Fprintln(w, "producer faults (by the 1.0 rules):")
		}
		faults++
		fmt.Fprintf(w, "stream: no terminal: %s\n", load.NoTerminal(int64(len(events))))
		fmt.Fprintln(w, "  hint: the producer likely closes the stream without RUN_FINISHED when a run ends early; consumers wait for it, and agui-relay load counts the run as failed")
	}
	if faults == 0 {
		fmt.Fprintln(w, "producer faults (by the 1.0 rules): none")
	}
	fmt.Fprintln(w)
	// The table is at most 100 columns wide: a cell that is not "yes" names
	// its first fatal finding by a number, and the findings follow, one a
	// line.
	t := &table{left: 4, header: []string{"consumer", "@ag-ui/client", "directly", "through the relay"}}
	var notes []string
	note := func(r reading) string {
		if r.ok {
			return "yes"
		}
		for i, n := range notes {
			if n == r.first {
				return fmt.Sprintf("no (%d)", i+1)
			}
		}
		notes = append(notes, r.first)
		return fmt.Sprintf("no (%d)", len(notes))
	}
	all = true
	for _, row := range consumerRows() {
		direct, through, served, _ := readAll(row, sse, events, now)
		d := note(direct)
		th := "not served"
		if served {
			th = note(through)
			all = all && through.ok
		}
		t.add(row.name, row.span(), d, th)
	}
	t.text(w)
	if len(notes) > 0 {
		fmt.Fprintln(w, "the first fatal finding, by its number above:")
	}
	for i, n := range notes {
		num := fmt.Sprintf("  (%d) ", i+1)
		for k, l := range wrap(n, checkWidth-len(num)) {
			if k > 0 {
				num = strings.Repeat(" ", len(num))
			}
			fmt.Fprintln(w, num+l)
		}
	}
	if ok, why := negotiate.Supported(negotiate.Profiles[0].Last); !ok {
		for _, l := range wrap("not served: "+why, checkWidth) {
			fmt.Fprintln(w, l)
		}
	}
	if run.Terminal() == "" {
		fmt.Fprintln(w, "\nsummary: the stream has no terminal event: every consumer waits for one")
		return false, run, faults, nil
	}
	if all {
		fmt.Fprintln(w, "\nsummary: every consumer the relay serves reads the stream through it")
	} else {
		fmt.Fprintln(w, "\nsummary: some consumers the relay serves cannot read the stream even through it (the producer's faults above are the likely cause)")
	}
	return all, run, faults, nil
}

// checkWidth is the widest line check --url and --profiles print, the URL
// aside: a terminal of 100 columns shows the table unwrapped.
const checkWidth = 100

// wrapWriter writes lines wider than width wrapped at spaces, each
// continuation indented four spaces past the line's own indent; narrower
// lines (a table's) pass as they are.
type wrapWriter struct {
	w     io.Writer
	width int
	line  []byte
}

func (ww *wrapWriter) Write(p []byte) (int, error) {
	for _, c := range p {
		if c != '\n' {
			ww.line = append(ww.line, c)
			continue
		}
		if err := ww.flush(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// close writes the last line when it has no newline.
func (ww *wrapWriter) close() {
	if len(ww.line) > 0 {
		ww.flush() //nolint:errcheck // the output's end: nothing else to tell
	}
}

// flush writes the line in hand, with a newline.
func (ww *wrapWriter) flush() error {
	l := string(ww.line)
	ww.line = ww.line[:0]
	if utf8.RuneCountInString(l) <= ww.width {
		_, err := io.WriteString(ww.w, l+"\n")
		return err
	}
	indent := l[:len(l)-len(strings.TrimLeft(l, " "))]
	var b strings.Builder
	for i, part := range wrap(l, ww.width-len(indent)-4) {
		if i == 0 {
			b.WriteString(indent + part + "\n")
			continue
		}
		b.WriteString(indent + "    " + part + "\n")
	}
	_, err := io.WriteString(ww.w, b.String())
	return err
}

// liveOptions are check's flags for a live run.
type liveOptions struct {
	headers  []load.Header
	timeouts load.Timeouts
	insecure bool
}

func (o *liveOptions) flags(fs *flag.FlagSet) {
	o.timeouts = load.Timeouts{Connect: 10 * time.Second, Headers: 5 * time.Minute, Idle: 5 * time.Minute, Run: 10 * time.Minute}
	fs.Func("header", "with --url, a request header 'Name: value'; repeat for several", headerFlag(&o.headers))
	fs.Func("H", "with --url, a request `header` 'Name: value', as curl and hey take it: short for --header", headerFlag(&o.headers))
	fs.DurationVar(&o.timeouts.Connect, "connect-timeout", o.timeouts.Connect, "with --url, time to connect (0: none)")
	fs.DurationVar(&o.timeouts.Headers, "headers-timeout", o.timeouts.Headers, "with --url, time from the request to the response's headers (0: none)")
	fs.DurationVar(&o.timeouts.Idle, "idle-timeout", o.timeouts.Idle, "with --url, longest silence inside the stream (0: none)")
	fs.DurationVar(&o.timeouts.Run, "run-timeout", o.timeouts.Run, "with --url, longest run (0: none)")
	fs.BoolVar(&o.insecure, "insecure", false, "with an https --url, do not verify the server's certificate")
}

// checkURL makes one live run, posting the RunAgentInput read from r (nil:
// the default input), and prints the profiles table.
func checkURL(url string, r io.Reader, name string, o liveOptions, stdout, stderr io.Writer) int {
	// The default input gets ids of its own, so that a producer that
	// responds with fixed ones shows.
	var rnd [4]byte
	rand.Read(rnd[:]) //nolint:errcheck // never fails
	id := "check-" + hex.EncodeToString(rnd[:])
	input, _ := sjson.SetBytes(load.DefaultInput, "threadId", "thread-"+id)
	input, _ = sjson.SetBytes(input, "runId", "run-"+id)
	if r != nil {
		b, err := io.ReadAll(io.LimitReader(r, maxCheckInput+1))
		if err == nil && len(b) > maxCheckInput {
			err = fmt.Errorf("input larger than %d bytes", maxCheckInput)
		}
		if err == nil {
			err = load.CheckInput(b)
		}
		if err != nil {
			fmt.Fprintf(stderr, "agui-relay check: --input %s: %v\n", name, err)
			return 1
		}
		input = b
	}
	if _, err := load.ParseTarget(url); err != nil {
		fmt.Fprintf(stderr, "agui-relay check: --url: %v\n", err)
		return 2
	}
	sse, resp, err := liveRun(url, o, input)
	if sse == nil {
		fmt.Fprintf(stderr, "agui-relay check: %s: %v\n", url, err)
		return 1
	}
	coding := ""
	if resp.ContentEncoding != "" {
		coding = " decoded from " + resp.ContentEncoding
	}
	fmt.Fprintf(stdout, "agui-relay check: %s\n", url)
	stdout = &wrapWriter{w: stdout, width: checkWidth}
	defer stdout.(*wrapWriter).close()
	fmt.Fprintf(stdout, "response: HTTP %d, %s, %d bytes%s\n", resp.Status, resp.ContentType, len(sse), coding)
	if err != nil {
		fmt.Fprintf(stdout, "the stream ended early (%v): judged what arrived\n", err)
	}
	if note := idsNote(input, sse); note != "" {
		fmt.Fprintln(stdout, note)
	}
	all, run, faults, terr := profilesTable(stdout, sse, time.Now())
	if terr != nil {
		fmt.Fprintf(stderr, "agui-relay check: reading the stream: %v\n", terr)
		return 1
	}
	// The run's verdict is load's: a run the producer ended with RUN_ERROR
	// failed, however well-formed its stream.
	kind, msg := run.Verdict()
	if strings.HasPrefix(kind, "RUN_ERROR") && err == nil {
		stream := "the stream is well-formed, but"
		if faults > 0 {
			stream = "apart from the stream's faults above,"
		}
		fmt.Fprintf(stdout, "run: failed: the producer ended the run with %s: %s the run itself failed (agui-relay load counts it as failed)\n", msg, stream)
	}
	if !all || err != nil || kind != "" {
		return 1
	}
	return 0
}

// idsNote says when the stream's first RUN_STARTED names a threadId or
// runId other than the posted input's: a producer that ignores them (a
// mock responding to every run alike) mixes runs up for a consumer that keys
// on them. "" when it names the posted ones, or the stream has no
// RUN_STARTED.
func idsNote(input, sse []byte) string {
	evs, _ := streamEvents(sse)
	for _, ev := range evs {
		if string(rules.PeekType(ev)) != "RUN_STARTED" {
			continue
		}
		pt, pr := gjson.GetBytes(input, "threadId").String(), gjson.GetBytes(input, "runId").String()
		th, run := gjson.GetBytes(ev, "threadId").String(), gjson.GetBytes(ev, "runId").String()
		if th == pt && run == pr {
			return ""
		}
		return fmt.Sprintf("ids: posted threadId %q and runId %q, RUN_STARTED said %q and %q: the producer ignores the input's ids (a consumer that keys on them mixes runs up)", pt, pr, th, run)
	}
	return ""
}

// checkProfiles prints the profiles table of a recorded stream.
func checkProfiles(r io.Reader, name string, stdout, stderr io.Writer) int {
	br := bufio.NewReaderSize(r, 64<<10)
	var in io.Reader = br
	if jsonLines(br) {
		in = &linesAsSSE{r: br}
	}
	sse, err := io.ReadAll(io.LimitReader(in, maxCheckStream+1))
	if err == nil && len(sse) > maxCheckStream {
		err = fmt.Errorf("larger than %d MiB", maxCheckStream>>20)
	}
	var all bool
	if err == nil {
		all, _, _, err = profilesTable(stdout, sse, time.Now())
	}
	if err != nil {
		fmt.Fprintf(stderr, "agui-relay check: reading %s: %v\n", name, err)
		return 1
	}
	if !all {
		return 1
	}
	return 0
}
