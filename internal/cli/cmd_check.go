package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agui-relay/agui-relay/event"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// maxCheckInput caps a RunAgentInput read by check --input, as serve's
// --max-body default does.
const maxCheckInput = 64 << 20

func runCheck(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("check", &cmdOutput{stdout, stderr})
	version := fs.String("version", negotiate.Current.String(), "protocol version to judge against: MAJOR.MINOR (1.0) or a legacy SDK release 0.0.N")
	input := fs.Bool("input", false, "judge one RunAgentInput document instead of an event stream; with --url, FILE is the RunAgentInput to post")
	url := fs.String("url", "", "make one live run against this agent URL and judge its stream for every consumer (implies --profiles)")
	profiles := fs.Bool("profiles", false, "judge the stream for every consumer profile the relay knows, directly and through the relay, as a table")
	var lo liveOptions
	lo.flags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: agui-relay check [--version V] [--input] [FILE]
       agui-relay check --profiles [FILE]
       agui-relay check --url URL [--input FILE]

Judges a recorded event stream (SSE data: frames, or one JSON event per line)
or, with --input, one RunAgentInput, read from FILE or stdin, against what a
consumer of version V reads. For every event it prints the index, the type
and the verdict: accepted, translated (a retired shape, with its
replacement), stripped (unrecognised material, by JSON pointer), rejected
(unrecognised material this version fails the run on) or malformed (by JSON
pointer and rule); then sequence faults (steps finished but never started,
events before RUN_STARTED, ...) with the likely cause at the producer.

Exit status: 0 when a consumer of V would run the stream, 1 when anything is
malformed or fatal to it (or the file cannot be read), 2 on usage errors.

With --profiles, or --url (one live run: a POST of FILE's RunAgentInput, or
a small default one, answered by an event stream), it prints the producer's
declared protocolVersion and its faults by the 1.0 rules with their likely
causes, then a table with one row per consumer the relay knows (every
legacy profile, 1.0, and the CopilotKit releases by the @ag-ui/client they
bundle): whether it reads the stream directly, and through the relay, with
the first fatal finding and its JSON pointer where it does not. Exit status
0 when every consumer the relay serves reads it through the relay, 1
otherwise or when the agent cannot be reached, does not answer with an
event stream, or the input is malformed.

examples:
  agui-relay check --version 0.0.45 emitted.sse
  agui-relay check --profiles producer.sse
  agui-relay check --url 'http://127.0.0.1:8080/agent?version=0.0.40'
  agui-relay check --url https://agent.example.com/api --header "Authorization: Bearer $TOKEN" --input chat.json

flags:
`)
		fs.PrintDefaults()
	}
	// Flags may follow FILE, as users of a checker expect.
	files, code, ok := parseInterspersed(fs, args)
	if !ok {
		return code
	}
	if len(files) > 1 {
		return usageError(fs, fmt.Errorf("at most one FILE, got %q", files))
	}
	v, err := negotiate.ParseKnown(*version)
	if err != nil {
		return usageError(fs, fmt.Errorf("--version: %v", err))
	}
	r := stdin
	name := "stdin"
	if len(files) == 1 && files[0] != "-" {
		name = files[0]
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(stderr, "agui-relay check: %v\n", err)
			return 1
		}
		defer f.Close()
		r = f
	}
	if *url != "" {
		if len(files) > 0 && !*input {
			return usageError(fs, errors.New("with --url, FILE is the RunAgentInput to post: give --input"))
		}
		if !*input {
			r = nil
		}
		return checkURL(*url, r, name, lo, stdout, stderr)
	}
	if *profiles {
		if *input {
			return usageError(fs, errors.New("--profiles judges an event stream, not --input"))
		}
		return checkProfiles(r, name, stdout, stderr)
	}
	c := checker{v: v, out: stdout, now: time.Now()}
	if *input {
		err = c.input(r)
	} else {
		err = c.stream(r)
	}
	if err != nil {
		fmt.Fprintf(stderr, "agui-relay check: reading %s: %v\n", name, err)
		return 1
	}
	if c.failed {
		return 1
	}
	return 0
}

// checker prints judgements. now decides whether a retired shape's
// translation is still live.
type checker struct {
	v      negotiate.Version
	out    io.Writer
	now    time.Time
	failed bool

	events int
	counts [5]int // by word: accepted, translated, stripped, rejected, malformed
	faults int
}

var words = [...]string{"accepted", "translated", "stripped", "rejected", "malformed"}

const (
	wAccepted = iota
	wTranslated
	wStripped
	wRejected
	wMalformed
)

func (c *checker) input(r io.Reader) error {
	b, err := io.ReadAll(io.LimitReader(r, maxCheckInput+1))
	if err != nil {
		return err
	}
	if len(b) > maxCheckInput {
		return fmt.Errorf("input larger than %d bytes", maxCheckInput)
	}
	j := rules.JudgeInput(c.v, b)
	w := c.word(j)
	fmt.Fprintf(c.out, "input: %s\n", words[w])
	c.findings(b, j)
	fmt.Fprintf(c.out, "summary: RunAgentInput judged against %s: %s\n", c.v, words[w])
	return nil
}

func (c *checker) stream(r io.Reader) error {
	br := bufio.NewReader(r)
	st := rules.NewStream(c.v)
	each := func(ev []byte) {
		i := c.events
		c.events++
		j := rules.JudgeEvent(c.v, ev)
		w := c.word(j)
		c.counts[w]++
		fmt.Fprintf(c.out, "#%d %s: %s\n", i, eventType(ev), words[w])
		c.findings(ev, j)
		for _, f := range st.Next(ev) {
			c.faults++
			c.failed = true
			fmt.Fprintf(c.out, "  stream: %s: %s\n", f.Rule, f.Detail)
			if f.Hint != "" {
				fmt.Fprintf(c.out, "    hint: %s\n", f.Hint)
			}
		}
	}
	var err error
	if jsonLines(br) {
		err = eachLine(br, each)
	} else {
		sc := event.NewScanner(br, 0)
		for {
			f, e := sc.Next()
			if e != nil {
				if e != io.EOF {
					err = e
				}
				break
			}
			if f.HasData() {
				each(f.Data)
			}
		}
	}
	fmt.Fprintf(c.out, "summary: %d events judged against %s:", c.events, c.v)
	for w, n := range c.counts {
		if w > 0 {
			fmt.Fprint(c.out, ",")
		}
		fmt.Fprintf(c.out, " %d %s", n, words[w])
	}
	fmt.Fprintf(c.out, "; %d stream faults\n", c.faults)
	return err
}

// word is the verdict of a whole document in check's vocabulary.
func (c *checker) word(j rules.Judgement) int {
	w := wAccepted
	for _, f := range j.Findings {
		if fw := c.findingWord(f); fw > w {
			w = fw
		}
	}
	if w >= wRejected {
		c.failed = true
	}
	return w
}

func (c *checker) findingWord(f rules.Finding) int {
	switch f.Verdict {
	case rules.Malformed:
		return wMalformed
	case rules.Retired:
		if d, ok := rules.LookupDeprecation(f.Shape); ok && d.LiveAt(c.now) {
			return wTranslated
		}
		// An expired translation is gone: the shape is unrecognised.
		if c.v.Legacy() {
			return wRejected
		}
		return wStripped
	case rules.Unrecognised:
		if f.Fatal {
			return wRejected
		}
		return wStripped
	}
	return wAccepted
}

func (c *checker) findings(doc []byte, j rules.Judgement) {
	seen := map[string]bool{}
	for _, f := range j.Findings {
		ptr := f.Pointer
		if ptr == "" {
			ptr = "(whole)"
		}
		line := fmt.Sprintf("  %s: %s: %s (%s)", ptr, words[c.findingWord(f)], f.Rule, f.Shape)
		if f.Verdict == rules.Retired {
			if d, ok := rules.LookupDeprecation(f.Shape); ok {
				line += fmt.Sprintf(" → %s [step %s, retired in %s, translation expires %s]",
					d.Replacement, d.Step, d.Retired, d.Expires.Format(time.DateOnly))
			}
		}
		fmt.Fprintln(c.out, line)
		if h := rules.Hint(c.v, doc, f); h != "" && !seen[h] {
			seen[h] = true
			fmt.Fprintf(c.out, "    hint: %s\n", h)
		}
	}
}

// eventType names an event for the listing: its type as the consumer reads
// it, "?" when it has none or is not JSON.
func eventType(ev []byte) string {
	t := rules.PeekType(ev)
	if len(t) == 0 || !rules.Valid(string(ev)) {
		return "?"
	}
	return string(t)
}

// jsonLines reports whether the stream is one JSON event per line rather
// than SSE: its first non-blank byte opens an object.
func jsonLines(br *bufio.Reader) bool {
	for n := 1; ; n++ {
		b, err := br.Peek(n)
		if len(b) < n {
			return false
		}
		switch b[n-1] {
		case ' ', '\t', '\r', '\n':
			if err != nil {
				return false
			}
			continue
		case 0xEF: // a byte-order mark starts SSE or JSON alike; SSE handles it
			return false
		}
		return b[n-1] == '{'
	}
}

func eachLine(br *bufio.Reader, each func([]byte)) error {
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 64<<10), 10<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		each(line)
	}
	return sc.Err()
}
