package event

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
)

// replay runs a recorded producer stream through a Stream as the relay
// does (translate reads recordings the same way).
func replay(t *testing.T, producer []byte, consumer, producerConfigured negotiate.Version) []byte {
	t.Helper()
	out, _ := replayStream(t, producer, consumer, producerConfigured)
	return out
}

// replayStream is replay returning the Stream too, for its counts.
func replayStream(t *testing.T, producer []byte, consumer, producerConfigured negotiate.Version) ([]byte, *Stream) {
	t.Helper()
	return replayStreamWith(t, &Translator{}, producer, consumer, producerConfigured)
}

// replayWith is replay through a given Translator.
func replayWith(t *testing.T, tr *Translator, producer []byte, consumer negotiate.Version) []byte {
	t.Helper()
	out, _ := replayStreamWith(t, tr, producer, consumer, negotiate.Version{})
	return out
}

func replayStreamWith(t *testing.T, tr *Translator, producer []byte, consumer, producerConfigured negotiate.Version) ([]byte, *Stream) {
	t.Helper()
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	st := tr.NewStream(consumer, producerConfigured, w)
	pumpAll(t, st, bytes.NewReader(producer))
	st.Close()
	w.Flush()
	return out.Bytes(), st
}
