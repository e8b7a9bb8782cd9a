package cluster

// Leads reports whether the kind's nodes have roles (a leader and
// followers: a ZooKeeper ensemble, an etcd cluster, the Sentinels' primary),
// so that a fault may aim at `node: leader` or `node: follower`.
func (k Kind) Leads() bool { return k.role != nil }
