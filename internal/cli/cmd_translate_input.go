package cli

import (
	"fmt"
	"io"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
	"github.com/agui-relay/agui-relay/translate"
)

// runTranslateInput is `translate --input`: it shapes one RunAgentInput, read
// from in, for a producer of version to (or, when toPy is set, on that
// Python release), with translate.TranslateInput (the
// same call the relay makes before contacting the producer). from is the
// version the consumer speaks; zero means what the relay reads it as with
// --consumer-version auto: what the input declares on protocolVersion, else
// (undeclared: it predates the field) negotiate.NewestBeforeField. The
// translated document goes to stdout as bytes, byte for byte the input when
// nothing needs translating; warnings go to stderr.
func runTranslateInput(in io.Reader, stdout, stderr io.Writer, to negotiate.Version, toPy negotiate.PyRelease, from negotiate.Version) int {
	doc, err := io.ReadAll(io.LimitReader(in, maxCheckInput+1))
	if err != nil {
		fmt.Fprintf(stderr, "agui-relay translate --input: reading: %v\n", err)
		return 1
	}
	if len(doc) > maxCheckInput {
		fmt.Fprintf(stderr, "agui-relay translate --input: input larger than %d bytes\n", maxCheckInput)
		return 1
	}
	if !rules.Valid(string(doc)) || !gjson.ParseBytes(doc).IsObject() {
		fmt.Fprintln(stderr, "agui-relay translate --input: the input is not a JSON object")
		return 1
	}
	consumer := from
	if consumer.IsZero() {
		var peer negotiate.Peer
		if pv := gjson.GetBytes(doc, "protocolVersion"); pv.Exists() {
			peer.HasDeclared, peer.Declared = true, pv.Str
			if pv.Type != gjson.String {
				peer.Declared = pv.Raw
			}
		}
		v, _, warns, err := negotiate.ConsumerVersion(peer)
		if err != nil {
			fmt.Fprintf(stderr, "agui-relay translate --input: %v\n", err)
			return 1
		}
		for _, w := range warns {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
		consumer = v
	}
	plan := negotiate.DecideInput(consumer, to)
	if !toPy.IsZero() {
		plan = negotiate.DecidePythonInput(consumer, toPy)
	}
	out, run := translate.TranslateInput(plan, doc, &translate.LineObserver{W: stderr})
	if _, err := stdout.Write(out); err != nil {
		fmt.Fprintf(stderr, "agui-relay translate --input: writing: %v\n", err)
		return 1
	}
	run.Finish()
	return 0
}
