# locklab: build, test and bench. `make help` lists the targets.
GO ?= go
BIN := bin/locklab
# Bench settings; override on the command line: make bench CLIENTS=1,8
APPROACHES ?= redis-setnx-px-lua,mysql-insert-delete
CLIENTS ?= 1,8,32
DURATION ?= 5s

.PHONY: help deps build test vet bench gobench clean

help:
	@echo "make deps      install servers and Go (Debian 12)"
	@echo "make build     build $(BIN)"
	@echo "make test      gofmt, go vet, and every test against real servers"
	@echo "make bench     locklab bench on the embedded servers (APPROACHES, CLIENTS, DURATION)"
	@echo "make gobench   Go benchmarks (history, checker)"

deps:
	./scripts/deps.sh

build:
	$(GO) build -o $(BIN) ./cmd/locklab

vet:
	@fmt="$$(gofmt -l .)"; if [ -n "$$fmt" ]; then echo "gofmt needed: $$fmt"; exit 1; fi
	$(GO) vet ./...

test: vet
	$(GO) test -count=1 -timeout 20m ./...

bench: build
	./$(BIN) bench --approaches $(APPROACHES) --clients $(CLIENTS) --duration $(DURATION)

gobench:
	$(GO) test -run '^$$' -bench . -benchmem ./history/ ./checker/

clean:
	rm -rf bin
