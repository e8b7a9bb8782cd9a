package redis

import (
	"sync"
	"sync/atomic"
)

// workers runs functions on goroutines kept between rounds, starting one
// more whenever none is idle (a request to a stopped node holds its
// goroutine until its deadline; the others go on). A goroutine started
// per request begins on a small stack and grows it in every go-redis call:
// copying stacks took 16% of the client's CPU in BenchmarkCycle, on the
// path of every request.
type workers struct {
	tasks chan func()
	done  chan struct{}
	once  sync.Once
	// started counts the goroutines it started (reuse shows in tests).
	started atomic.Int64
}

func newWorkers() *workers {
	return &workers{tasks: make(chan func()), done: make(chan struct{})}
}

// run runs f on an idle worker, or on a new one.
func (w *workers) run(f func()) {
	select {
	case w.tasks <- f:
	default:
		w.started.Add(1)
		go w.loop(f)
	}
}

func (w *workers) loop(f func()) {
	for {
		f()
		select {
		case f = <-w.tasks:
		case <-w.done:
			return
		}
	}
}

// close lets every worker end once its function returns.
func (w *workers) close() { w.once.Do(func() { close(w.done) }) }

func (r *Redlock) quorum() int { return len(r.nodes)/2 + 1 }

// all marks every node.
func (r *Redlock) all() []bool {
	all := make([]bool, len(r.nodes))
	for i := range all {
		all[i] = true
	}
	return all
}
