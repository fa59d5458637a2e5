# make test checks the formatting and go vet, runs every test of the
# module (go test ./...), then the suites behind the integration build tag,
# which need more than Go: the conformance suite against the published @ag-ui/client
# releases (its Node packages are installed from
# conformance/package-lock.json on first use), then the browser test in
# headless Chromium (browser/setup.sh installs Debian's chromium, as root,
# and the Node packages of browser/package-lock.json on first use).
GO ?= go

.PHONY: test lint unit conformance conformance-deps browser browser-deps bench build soak fuzz

test: lint unit conformance browser

# A file gofmt would change, or a finding of go vet, fails the run; the
# vet for Windows keeps the relay and its tests building off Unix (the
# bench is Linux's: /proc, perf, taskset).
lint:
	@out=$$($$($(GO) env GOROOT)/bin/gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags integration ./conformance/ ./browser/
	GOOS=windows $(GO) vet $$($(GO) list ./... | grep -v /bench)

unit:
	$(GO) test ./...

conformance: conformance-deps
	./conformance/run.sh

conformance-deps:
	./conformance/setup.sh

# On a failure the page's screenshot is under browser/out/_artifacts/ (the
# test's log names the file).
browser: browser-deps
	@mkdir -p browser/out
	$(GO) test -tags integration -count=1 -v -artifacts -outputdir $(CURDIR)/browser/out ./browser/

browser-deps:
	./browser/setup.sh

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./event/... ./relay/... ./translate/... ./rules/...

build:
	$(GO) build -o agui-relay .

# The long soak of the relay (2000 concurrent streams for 70s); a short one
# runs in every go test.
soak:
	$(GO) test -tags soak -run Soak -v -timeout 10m ./relay/

# Fuzz every target for FUZZTIME each (their seeds run in every go test).
# A bare "context deadline exceeded" as a target's time ends, with no input
# written under testdata/fuzz, is Go 1.26's fuzzing coordinator, not a
# finding (go.dev/issue/75804); a count (FUZZTIME=200000x) avoids it.
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzScanner$$' -fuzztime $(FUZZTIME) ./event/
	$(GO) test -run '^$$' -fuzz '^FuzzScannerFraming$$' -fuzztime $(FUZZTIME) ./event/
	$(GO) test -run '^$$' -fuzz '^FuzzChunked$$' -fuzztime $(FUZZTIME) ./internal/wire/
	$(GO) test -run '^$$' -fuzz '^FuzzJudgeEvent$$' -fuzztime $(FUZZTIME) ./rules/
	$(GO) test -run '^$$' -fuzz '^FuzzJudgeInput$$' -fuzztime $(FUZZTIME) ./rules/
	$(GO) test -run '^$$' -fuzz '^FuzzReadInput$$' -fuzztime $(FUZZTIME) ./rules/
	$(GO) test -run '^$$' -fuzz '^FuzzPeekType$$' -fuzztime $(FUZZTIME) ./rules/
	$(GO) test -run '^$$' -fuzz '^FuzzValidMatchesGJSON$$' -fuzztime $(FUZZTIME) ./rules/
	$(GO) test -run '^$$' -fuzz '^FuzzNextFlat$$' -fuzztime $(FUZZTIME) ./rules/
	$(GO) test -run '^$$' -fuzz '^FuzzEventTranslation$$' -fuzztime $(FUZZTIME) ./translate/
	$(GO) test -run '^$$' -fuzz '^FuzzInputTranslation$$' -fuzztime $(FUZZTIME) ./translate/
	$(GO) test -run '^$$' -fuzz '^FuzzThinkingSplice$$' -fuzztime $(FUZZTIME) ./translate/
	$(GO) test -run '^$$' -fuzz '^FuzzScan$$' -fuzztime $(FUZZTIME) ./translate/
	$(GO) test -run '^$$' -fuzz '^FuzzTopMembers$$' -fuzztime $(FUZZTIME) ./translate/
