package cli

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/agui-relay/agui-relay/event"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/translate"
)

const translateUsage = `usage: agui-relay translate [--input] --to V [--from V] [FILE]

Translates a recorded event stream (SSE data: frames, or one JSON event per
line), read from FILE or stdin, for a consumer of version V, through the same
translation as the live relay: a recording translated here and the same
stream relayed live give the same bytes. It writes the stream as SSE to
stdout; what a translation loses is logged on stderr, one line per event.
With --input it translates one RunAgentInput instead, from the consumer's
version (--from) to what the producer of version V reads.

Exit status: 0 when the stream or input was translated (an event that is
not JSON passes as it came, as the relay passes it), 1 when FILE cannot be
read, stdout cannot be written or --input's document is not a JSON object,
2 on usage errors.

examples:
  # a 1.0 producer's recording, as a consumer of 0.0.45 reads it
  agui-relay translate --to 0.0.45 emitted.sse > for-0.0.45.sse
  # a legacy producer's stream, for a 1.0 consumer
  agui-relay translate --from 0.0.40 --to 1.0 < legacy.sse
  # an old consumer's RunAgentInput, as a Python producer on ag-ui-protocol 0.1.19 reads it
  agui-relay translate --input --from 0.0.45 --to ag-ui-protocol@0.1.19 input.json

flags:
`

// runTranslate translates a recorded event stream (SSE data: frames, or one
// JSON event per line) for a consumer of --to, through the same
// event.Translator and event.Stream as the live relay, so a recording
// translated offline and the same stream relayed live give the same bytes.
func runTranslate(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("translate", &cmdOutput{stdout, stderr})
	to := fs.String("to", "", "version the consumer reads (required): 1.0, or a legacy SDK release such as 0.0.45\n(with --input, the producer: a Python release such as ag-ui-protocol@0.1.19 too)")
	from := fs.String("from", "", "version the producer speaks, as --producer-version (a Python release such as py0.1.19 too)\n(default: learnt per run from RUN_STARTED.protocolVersion; absent there means a producer that predates the field).\nWith --input, the version the consumer speaks (default: its protocolVersion; undeclared, it predates the field and reads as "+negotiate.NewestBeforeField().String()+", as the relay reads it by default)")
	input := fs.Bool("input", false, "translate one RunAgentInput document instead of an event stream")
	maxFrame := fs.Int("max-frame", 10<<20, "largest single event accepted, in bytes")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), translateUsage)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0 // --help asked for the usage; it is no usage error
		}
		return usageError(fs, err)
	}
	switch {
	case *to == "":
		return usageError(fs, errors.New("--to is required"))
	case fs.NArg() > 1:
		return usageError(fs, fmt.Errorf("at most one FILE, got %q", fs.Args()))
	}
	// --input: --to names the producer, which may be a Python release.
	toV, toPy, toNamed, err := parseProducer(*to)
	if toNamed && !*input {
		err = fmt.Errorf("%s names a producer; the consumer reads 1.0 or a TypeScript release", *to)
	}
	if toNamed && err != nil {
		return usageError(fs, fmt.Errorf("--to: %v", err))
	}
	consumer := toV
	if !toNamed && *input {
		consumer, err = negotiate.ParseKnown(*to, negotiate.KnownPyReleases())
	} else if !toNamed {
		consumer, err = negotiate.ParseKnown(*to)
	}
	if err != nil {
		return usageError(fs, fmt.Errorf("--to: %v", err))
	}
	if ok, why := negotiate.Supported(consumer); !ok && !*input { // any producer takes input
		return usageError(fs, fmt.Errorf("--to %s: %s", consumer, why))
	}
	var producer negotiate.Version
	var producerPy negotiate.PyRelease
	if *from != "" {
		var named bool
		if producer, producerPy, named, err = parseProducer(*from); named && *input {
			err = fmt.Errorf("%s names a producer; with --input, --from is the consumer", *from)
		}
		if !named && *input {
			producer, err = negotiate.ParseKnown(*from)
		} else if !named {
			producer, err = negotiate.ParseKnown(*from, negotiate.KnownPyReleases())
		}
		if err != nil {
			return usageError(fs, fmt.Errorf("--from: %v", err))
		}
	}
	in := stdin
	if fs.NArg() == 1 {
		f, err := os.Open(fs.Arg(0))
		if err != nil {
			fmt.Fprintf(stderr, "agui-relay translate: %v\n", err)
			return 1
		}
		defer f.Close()
		in = f
	}
	if *input {
		// --to names the producer here, --from the consumer.
		return runTranslateInput(in, stdout, stderr, consumer, toPy, producer)
	}
	if err := translateEvents(in, stdout, stderr, consumer, producer, producerPy, *maxFrame); err != nil {
		fmt.Fprintf(stderr, "agui-relay translate: %v\n", err)
		return 1
	}
	return 0
}

// translateEvents runs a recorded stream through the relay's translation.
func translateEvents(in io.Reader, stdout, stderr io.Writer, consumer, producer negotiate.Version, py negotiate.PyRelease, maxFrame int) error {
	br := bufio.NewReaderSize(in, 64<<10)
	if jsonLines(br) { // shared with check
		in = &linesAsSSE{r: br}
	} else {
		in = br
	}
	tr := &event.Translator{Observer: &translate.LineObserver{W: stderr}}
	w := bufio.NewWriter(stdout)
	st := tr.NewStream(consumer, producer, w)
	st.ProducerPython = py
	st.OnPlan = func(p negotiate.Plan) { // as the relay logs them, once per run
		for _, w := range p.Warnings {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
	}
	sc := event.NewScanner(in, maxFrame)
	for {
		f, err := sc.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			st.Close()
			w.Flush()
			return fmt.Errorf("reading the stream: %w", err)
		}
		if err := st.Frame(&f); err != nil {
			st.Close()
			return fmt.Errorf("writing: %w", err)
		}
	}
	st.Close()
	return w.Flush()
}

// linesAsSSE frames every non-blank line of r as "data: <line>\n\n".
type linesAsSSE struct {
	r    *bufio.Reader
	pend []byte
	err  error
}

func (l *linesAsSSE) Read(p []byte) (int, error) {
	for len(l.pend) == 0 {
		if l.err != nil {
			return 0, l.err
		}
		line, err := l.r.ReadBytes('\n')
		l.err = err
		line = bytes.TrimSpace(bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF")))
		if len(line) > 0 {
			l.pend = append(append(append(l.pend[:0], "data: "...), line...), '\n', '\n')
		}
	}
	n := copy(p, l.pend)
	l.pend = l.pend[n:]
	return n, nil
}
