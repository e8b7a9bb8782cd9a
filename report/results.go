// Package report turns measurements into artifacts: results.json,
// HdrHistogram percentile files, plots and the printed table.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/metrics"
	"github.com/locklab/locklab/verdict"
)

// Results is results.json: everything needed to compare one run with another.
type Results struct {
	RunID      string            `json:"run_id"`
	StartedAt  time.Time         `json:"started_at"`
	FinishedAt time.Time         `json:"finished_at,omitempty"`
	Complete   bool              `json:"complete"`       // false: interrupted or failed part-way
	Note       string            `json:"note,omitempty"` // why it is incomplete
	Config     any               `json:"config"`         // the bench settings as given
	Versions   map[string]string `json:"versions"`       // locklab, go, each server
	Host       Host              `json:"host"`
	// Servers are the servers' own addresses (host:port), per kind: the
	// hosts the run sent its traffic to.
	Servers   map[string][]string `json:"servers,omitempty"`
	Runs      []Run               `json:"runs"`
	Verdict   Verdict             `json:"verdict"`
	Artifacts []string            `json:"artifacts,omitempty"` // files written next to this one
	// Explore is what locklab explore found (its findings, their shrinks,
	// the transitions covered); nil for other commands.
	Explore any `json:"explore,omitempty"`
	// StallThreshold is how late a wake-up of the stall monitor's probes
	// had to be to count as a stall of the lab, in seconds (0: no monitor).
	StallThreshold float64 `json:"stall_threshold_s"`
}

// Host describes the machine the numbers come from.
type Host struct {
	CPUs int    `json:"cpus"`
	OS   string `json:"os"`
}

// CPUUse is the processor time (user and system, in seconds) spent while
// a case's clients ran: locklab's own process (its goroutine clients, the
// recorder and checker; other cases run beside it count too, and worker
// processes do not) and the servers of the case's kind that locklab runs
// on this machine (none measured for containers or servers it did not
// start: Servers is then absent).
type CPUUse struct {
	Locklab float64  `json:"locklab_s"`
	Servers *float64 `json:"servers_s,omitempty"`
}

// Run is one case: one approach at one setting (a client count, a
// scenario, a matrix cell).
type Run struct {
	Case     string  `json:"case"`     // unique name within the results folder
	Approach string  `json:"approach"` // the lock approach
	Clients  int     `json:"clients"`
	Seconds  float64 `json:"seconds"`
	// Answered: the case ended before its duration, its question answered
	// (the violation it was expected to show was shown, or a fault it was
	// expected to be safe under watched through).
	Answered       bool    `json:"answered,omitempty"`
	Acquired       int64   `json:"acquired"`
	AcquiresPerSec float64 `json:"acquires_per_sec"`
	NotAcquired    int64   `json:"not_acquired"`
	Indeterminate  int64   `json:"indeterminate"`
	Errors         int64   `json:"errors"`
	FirstError     string  `json:"first_error,omitempty"`
	ReleaseNotHeld int64   `json:"release_not_held"`
	Acquire        Latency `json:"acquire_latency"`
	Release        Latency `json:"release_latency"`
	// HandOff is how long the lock stayed free between a release and the
	// grant to a client already waiting for it, per key.
	HandOff      Latency          `json:"hand_off"`
	Fairness     metrics.Fairness `json:"fairness"`
	DoubleGrants int              `json:"double_grants"`
	// Model is what the history was judged against (checker.Model);
	// empty when nothing was checked.
	Model checker.Model `json:"model,omitempty"`
	// ViolationCount counts every violation: double grants, lost updates,
	// stale writes, tasks processed twice, fencing tokens out of order.
	ViolationCount int                   `json:"violation_count"`
	ViolationKinds map[checker.Class]int `json:"violation_kinds,omitempty"`
	Violations     []string              `json:"violations,omitempty"` // the first few, described
	// Mechanisms counts the double grants whose history shows how they came
	// about (checker.RenewedOverAnother, checker.ReleasedOverAnother).
	Mechanisms map[string]int `json:"mechanisms,omitempty"`
	// AnomalyCount counts what the check reports that is no violation
	// (under the lease model, revocations during a release), by class in
	// AnomalyKinds, the first few described in Anomalies.
	AnomalyCount int                   `json:"anomaly_count,omitempty"`
	AnomalyKinds map[checker.Class]int `json:"anomaly_kinds,omitempty"`
	Anomalies    []string              `json:"anomalies,omitempty"`
	// LockLoss is how soon holders whose lock was taken away were told;
	// nil: no holder was.
	LockLoss             *LockLoss         `json:"lock_loss,omitempty"`
	Linearizable         checker.LinStatus `json:"linearizable"`
	RefusedStaleRequests int               `json:"refused_stale_requests,omitempty"`
	Artifacts            []string          `json:"artifacts,omitempty"` // timeline, visualizations
	Complete             bool              `json:"complete"`
	// Unrecovered: the servers failed their health check after every
	// fault was healed (the check's error); the next cases had servers
	// started anew.
	Unrecovered string `json:"unrecovered,omitempty"`
	ViaProxy    bool   `json:"via_proxy"` // clients went through the fault-injecting proxies
	Renewals    int64  `json:"renewals,omitempty"`
	Reentries   int64  `json:"reentries,omitempty"` // re-entries granted (workload reentry)
	Lost        int64  `json:"lost,omitempty"`      // holders told their lock was gone
	Replaced    int64  `json:"replaced,omitempty"`  // clients retired (indeterminate outcome, crash) and replaced
	Crashed     int64  `json:"crashed,omitempty"`   // client processes killed by a fault
	Late        int64  `json:"late,omitempty"`      // open loop: requests that started behind their schedule
	// CPU is what the run cost in processor time while its clients ran.
	CPU      *CPUUse        `json:"cpu,omitempty"`
	Faults   []Fault        `json:"faults,omitempty"`   // what chaos injected, in order
	Expected []string       `json:"expected,omitempty"` // the outcomes the case had to show
	Observed []string       `json:"observed,omitempty"` // the outcomes it showed
	Missing  []string       `json:"missing,omitempty"`  // expected outcomes that never showed
	Status   verdict.Status `json:"status,omitempty"`
	// Missed: it contradicts only because an expected violation did not
	// show (verdict.Result.Missed), which repeated runs may tolerate.
	Missed bool `json:"missed,omitempty"`
	// FirstViolationAt is when the first double grant came, in seconds
	// after the case's first fault took effect (after its start without
	// faults; 0 when it came before the fault); -1: none.
	FirstViolationAt float64 `json:"first_violation_at_s"`
	Explanation      string  `json:"explanation,omitempty"`
	// Deciding are the incidents of the violations that decided a
	// contradiction (forbidden, unpredicted, or any when safety was
	// expected), one line each, every one; Incidents are the others', the
	// first few (IncidentLines).
	Deciding  []string `json:"deciding,omitempty"`
	Incidents []string `json:"incidents,omitempty"`
	// StallCount counts the lab's own stalls during the case (a probe in
	// locklab, a worker or beside the containers woke later than the
	// threshold); Stalls lists the first few, LongestStall is the longest
	// in seconds. LabStalled: they fell on the events that decide the
	// verdict, which is then undecided ("inconclusive: the lab stalled").
	StallCount   int     `json:"stall_count"`
	LongestStall float64 `json:"longest_stall_s"`
	Stalls       []Stall `json:"stalls,omitempty"`
	LabStalled   bool    `json:"lab_stalled,omitempty"`
}

// Stall is one stall of the lab during a case, as results.json lists it.
type Stall struct {
	Who string  `json:"who"`  // "locklab", "worker N", "containers", "server NODE"
	At  float64 `json:"at_s"` // seconds into the case
	For float64 `json:"for_s"`
}

// Safe reports that the run's check found no violation and no
// non-linearizable key (checker.Verdict.Safe, over what the run keeps).
func (r Run) Safe() bool { return checker.Safe(r.ViolationCount, r.Linearizable) }

// OtherAnomalies counts what the check found besides double grants: the
// other violations and the anomalies that are none.
func (r Run) OtherAnomalies() int { return r.ViolationCount - r.DoubleGrants + r.AnomalyCount }

// Fault is one injection as results.json lists it.
type Fault struct {
	Fault  string  `json:"fault"`
	Target string  `json:"target"`
	At     float64 `json:"at_s"`            // seconds into the case
	For    float64 `json:"for_s,omitempty"` // seconds it lasted; 0 = until the end
	Error  string  `json:"error,omitempty"` // the injection failed
}

// Latency summarises a histogram in microseconds.
type Latency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean_us"`
	P50   float64 `json:"p50_us"`
	P90   float64 `json:"p90_us"`
	P99   float64 `json:"p99_us"`
	P999  float64 `json:"p99_9_us"`
	Max   float64 `json:"max_us"`
}

// Summarise reads the usual percentiles off a nanosecond histogram.
func Summarise(h *hdrhistogram.Histogram) Latency {
	if h == nil || h.TotalCount() == 0 {
		return Latency{}
	}
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	return Latency{
		Count: h.TotalCount(),
		Mean:  h.Mean() / 1e3,
		P50:   us(h.ValueAtQuantile(50)),
		P90:   us(h.ValueAtQuantile(90)),
		P99:   us(h.ValueAtQuantile(99)),
		P999:  us(h.ValueAtQuantile(99.9)),
		Max:   us(h.Max()),
	}
}

// Verdict is the safety summary over all runs.
type Verdict struct {
	DoubleGrants    int  `json:"double_grants"`
	Violations      int  `json:"violations"`       // every kind, double grants included
	NonLinearizable int  `json:"non_linearizable"` // runs with a non-linearizable key
	Safe            bool `json:"safe"`             // no violation found
	// Cases counts the cases by how they compared with their expectation.
	AsExpected   int `json:"as_expected"`
	Contradicted int `json:"contradicted"`
	Undecided    int `json:"undecided"`
}

// WriteFileAtomic writes data to path through a temp file and a rename, so
// a reader (or a crash) never sees a half-written file.
func WriteFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteJSON writes v as indented JSON, atomically.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return WriteFileAtomic(path, append(b, '\n'))
}

// WriteHgrm writes the percentile distribution of a nanosecond histogram in
// HdrHistogram's text format, values in microseconds (the format that
// HdrHistogram's plotter reads).
func WriteHgrm(path string, h *hdrhistogram.Histogram) error {
	var buf bytes.Buffer
	if _, err := h.PercentilesPrint(&buf, 5, 1e3); err != nil {
		return fmt.Errorf("hgrm %s: %w", path, err)
	}
	return WriteFileAtomic(path, buf.Bytes())
}

// maxResultsSize bounds what ReadResults reads: a results.json is a few
// hundred KB even for a full matrix.
const maxResultsSize = 64 << 20

// ReadResults reads a results.json, given as the file or as the results
// folder that holds it.
func ReadResults(path string) (*Results, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "results.json")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxResultsSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > maxResultsSize {
		return nil, fmt.Errorf("%s: larger than %d MB: not a results.json", path, maxResultsSize>>20)
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: not a results.json: %w", path, err)
	}
	if r.RunID == "" || len(r.Runs) == 0 {
		return nil, fmt.Errorf("%s: a results.json without runs", path)
	}
	return &r, nil
}
