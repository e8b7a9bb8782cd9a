// Package report turns measurements into artifacts: results.json,
// HdrHistogram percentile files, plots and the printed table.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
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
	Runs       []Run             `json:"runs"`
	Verdict    Verdict           `json:"verdict"`
	Artifacts  []string          `json:"artifacts,omitempty"` // files written next to this one
}

// Host describes the machine the numbers come from.
type Host struct {
	CPUs int    `json:"cpus"`
	OS   string `json:"os"`
}

// Run is one backend at one client count.
type Run struct {
	Backend        string  `json:"backend"`
	Clients        int     `json:"clients"`
	Seconds        float64 `json:"seconds"`
	Acquired       int64   `json:"acquired"`
	AcquiresPerSec float64 `json:"acquires_per_sec"`
	NotAcquired    int64   `json:"not_acquired"`
	Indeterminate  int64   `json:"indeterminate"`
	Errors         int64   `json:"errors"`
	FirstError     string  `json:"first_error,omitempty"`
	ReleaseNotHeld int64   `json:"release_not_held"`
	Acquire        Latency `json:"acquire_latency"`
	Release        Latency `json:"release_latency"`
	DoubleGrants   int     `json:"double_grants"`
	// ViolationCount counts every anomaly: double grants, lost updates,
	// stale writes, tasks processed twice, fencing tokens out of order.
	ViolationCount       int            `json:"violation_count"`
	ViolationKinds       map[string]int `json:"violation_kinds,omitempty"`
	Violations           []string       `json:"violations,omitempty"` // the first few, described
	Linearizable         string         `json:"linearizable"`         // yes, no, unknown, not checked
	RefusedStaleRequests int            `json:"refused_stale_requests,omitempty"`
	Artifacts            []string       `json:"artifacts,omitempty"` // timeline, visualizations
	Complete             bool           `json:"complete"`
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
