// Package conformance proves the relay against the real AG-UI packages: the
// published @ag-ui/client releases (one per legacy profile and in-profile
// step, and 1.0.0) run through the relay against recorded producer streams
// (testdata/streams and the recorded corpus under testdata/corpus), and the published @ag-ui/core
// schemas judge what the relay forwards. CopilotKit 1.75 (its runtime and its
// core, as an app runs them) reads producers written on the published
// @ag-ui/encoder releases through a relay started with no version flag.
//
// Everything lives in the tests, behind the integration build tag (go test
// -tags integration ./conformance, or run.sh); this file only names
// the package. The Node side is in js/ and package.json (npm ci from the lock
// file: see setup.sh). README.md lists the matrix and the pairs the relay
// cannot serve faithfully.
package conformance
