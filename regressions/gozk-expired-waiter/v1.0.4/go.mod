module github.com/locklab/locklab/regressions/gozk-expired-waiter/v1.0.4

go 1.26.0

require (
	github.com/go-zookeeper/zk v1.0.4
	github.com/locklab/locklab/regressions/goadapter v0.0.0
)

replace github.com/locklab/locklab/regressions/goadapter => ../../goadapter
