# make test runs every test of the module. Keep targets plain so that other
# steps (conformance tests, linters) can be added as prerequisites.
GO ?= go

.PHONY: test bench build

test:
	$(GO) test ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./relay/...

build:
	$(GO) build -o agui-relay .
