package relay

import "testing"

// platformStreamTests are the stream tests TestStreamsUnderEitherCarrier
// runs that are Linux's alone (their files' build constraints).
var platformStreamTests = []struct {
	name string
	test func(*testing.T)
}{
	{"StreamEndsAfterTheRequestedRun", TestStreamEndsAfterTheRequestedRun},
	{"HangupWatchKeptAcrossRuns", TestHangupWatchKeptAcrossRuns},
}
