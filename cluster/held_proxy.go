package cluster

import (
	"fmt"
	"strings"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// newHeldProxy starts a proxy of its own (in no collection: its owner
// stops it) in front of upstream that passes nothing either way: a
// replica pointed at it connects and then hears nothing, as across a cut
// link. The failover faults hold replication back with it.
func newHeldProxy(name, upstream string) (*toxiproxy.Proxy, error) {
	p := toxiproxy.NewProxy(toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()), name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("held replication proxy: %w", err)
	}
	for _, stream := range []string{"upstream", "downstream"} {
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(
			`{"name":"hold-` + stream + `","type":"timeout","stream":"` + stream + `","toxicity":1,"attributes":{"timeout":0}}`)); err != nil {
			p.Stop()
			return nil, fmt.Errorf("held replication proxy: %w", err)
		}
	}
	return p, nil
}
