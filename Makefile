# make test runs every test of the module, then the conformance suite
# against the published @ag-ui/client releases (its Node packages are
# installed from conformance/package-lock.json on first use).
GO ?= go

.PHONY: test unit conformance conformance-deps bench build

test: unit conformance

unit:
	$(GO) test $$($(GO) list ./... | grep -v /conformance)

conformance: conformance-deps
	./conformance/run.sh

conformance-deps:
	./conformance/setup.sh

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./relay/... ./translate/... ./rules/...

build:
	$(GO) build -o agui-relay .
