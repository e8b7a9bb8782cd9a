# locklab: build, test and bench. `make help` lists the targets.
GO ?= go
BIN := bin/locklab
# Bench settings; override on the command line: make bench CLIENTS=1,8
APPROACHES ?= redis-setnx-px-lua,mysql-insert-delete
CLIENTS ?= 1,8,32
DURATION ?= 5s

.PHONY: docker-weight help deps images build test vet bench gobench clean

help:
	@echo "make deps      install servers and Go (Debian 12)"
	@echo "make build     build $(BIN)"
	@echo "make images    build the server images of --cluster docker (scripts/images.sh)"
	@echo "make test      gofmt, go vet, and every test against real servers (embedded and in containers)"
	@echo "make bench     locklab bench on the embedded servers (APPROACHES, CLIENTS, DURATION)"
	@echo "make gobench   Go benchmarks (history, checker)"

deps:
	./scripts/deps.sh

build:
	$(GO) build -o $(BIN) ./cmd/locklab

vet:
	@fmt="$$(gofmt -l .)"; if [ -n "$$fmt" ]; then echo "gofmt needed: $$fmt"; exit 1; fi
	$(GO) vet ./...

images:
	./scripts/images.sh

# The Docker tests run against the images scripts/images.sh builds (reused
# when their packages are current: a few seconds).
# Four packages run at a time, the longest first (their order: a loaded
# run's package times, 2026-11-30), so the run does not end on one long
# package alone. The suite mostly waits (fault windows, holds,
# servers starting): three at a time took an idle run from 891 s to 642 s
# (2026-11-30); on 2026-12-03, 836 s at three, 729 s at four with the pinned
# adapters built one at a time, on colder caches (Go's build cache empty).
# Inside a package the long tests with servers of their own
# run side by side (-parallel 4: they mostly wait on their servers; the
# Sentinel failover cases wait most of their 33 s), and the conformance
# suites run their server kinds side by side. ./regressions builds the
# pinned library adapters on first use (into ~/.cache/locklab).
# -vet=off: vet ran over every package (the vet target) just before; go
# test's own vet pass would type-check each package again.
SLOW_PACKAGES := ./regressions ./conformance/indocker ./cmd/locklab ./approaches ./impls/redis ./runner ./impls/mysql ./explore ./cluster ./explore/planted ./impls/zk ./locklabtest ./conformance ./chaos ./impls/etcd ./adapter
# The JVMs the tests start (ZooKeeper servers, the Curator adapters, javac)
# compile with C1 only: they live seconds to a minute, and C2's compiler
# threads cost nearly a third of their CPU on two cores (./impls/zk: 26.6 -> 18.6
# CPU-s, wall 0.96x). Only for the tests: locklab bench keeps ZooKeeper's
# own defaults: C1 lowers its throughput at 8 and 32 clients by 7-13%.
test: export JAVA_TOOL_OPTIONS = -XX:TieredStopAtLevel=1
test: vet images docker-weight
	$(GO) test -vet=off -count=1 -p 4 -parallel 4 -timeout 30m $(SLOW_PACKAGES) ./...

# On a cgroup v1 host all of Docker's containers weigh as one process
# beside the tests' servers and any busy neighbour: the script says why
# and gives them eight processes' weight (nothing elsewhere).
docker-weight:
	./scripts/docker-cpu-weight.sh

bench: build
	./$(BIN) bench --approaches $(APPROACHES) --clients $(CLIENTS) --duration $(DURATION)

gobench:
	$(GO) test -run '^$$' -bench . -benchmem ./history/ ./checker/

clean:
	rm -rf bin
