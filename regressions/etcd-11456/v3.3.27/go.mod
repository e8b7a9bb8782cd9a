module github.com/locklab/locklab/regressions/etcd-11456/v3.3.27

go 1.22

require (
	github.com/coreos/etcd v3.3.27+incompatible
	github.com/locklab/locklab/regressions/goadapter v0.0.0
	// The versions of the v3.3 branch's time: its balancer does not build
	// against grpc from 1.27 on.
	github.com/golang/protobuf v1.3.5
	google.golang.org/genproto v0.0.0-20191108220845-16a3f7862a1a
	google.golang.org/grpc v1.26.0
)

require (
	github.com/coreos/go-semver v0.3.1 // indirect
	github.com/coreos/go-systemd v0.0.0-20191104093116-d3cd4ed1dbcf // indirect
	github.com/coreos/pkg v0.0.0-20240122114842-bbd7aa9bf6fb // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	go.uber.org/zap v1.28.0 // indirect
	golang.org/x/net v0.0.0-20201021035429-f5854403a974 // indirect
	golang.org/x/sys v0.0.0-20200930185726-fdedc70b468f // indirect
	golang.org/x/text v0.3.3 // indirect
)

replace github.com/locklab/locklab/regressions/goadapter => ../../goadapter
