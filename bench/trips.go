//go:build !js

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/metrics"
)

// responseTrips is the storage round trips a Go subject made on a new
// order's response path: before the gateway's answer, since everything
// after it follows the response.
type responseTrips struct {
	subject     string
	trips, most int
}

// floorTrips is the most round trips a new order may make before its
// answer, per mode: the ledger's claim; KV's lookup (the receipt and the
// claim read at once) and its claim. The commit follows the answer, but
// for the stand-in over KV, which has no settler there to store a receipt
// whose write failed and commits before it answers, one round trip more.
func floorTrips(s *subject) int {
	if s.opts.Environment == "ledger" {
		return 1
	}
	if !s.withGateway {
		return 3
	}
	return 2
}

// countTrips places one new order on s and reads the storage round trips
// its request's data point counted (metrics' storage_calls), which
// bench/latency/go.mjs records: the point is written as the response
// goes, so the commit after it is not in it.
func countTrips(ctx context.Context, s *subject) (responseTrips, error) {
	out := responseTrips{subject: s.name, most: floorTrips(s)}
	if _, err := benchPoints(ctx, s.srv.URL); err != nil { // starts recording
		return out, err
	}
	key := fmt.Sprintf("bench-trips-%d", time.Now().UnixNano())
	req, err := http.NewRequestWithContext(ctx, "POST", s.srv.URL+"/", strings.NewReader(`{"symbol":"MSFT","side":"buy","quantity":1}`))
	if err != nil {
		return out, err
	}
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return out, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return out, fmt.Errorf("a new order answered %d", resp.StatusCode)
	}
	points, err := benchPoints(ctx, s.srv.URL)
	if err != nil {
		return out, err
	}
	column := metrics.DoubleIndex("storage_calls")
	for _, p := range points {
		if len(p.Blobs) > 0 && p.Blobs[0] == string(metrics.New) && column >= 0 && column < len(p.Doubles) {
			out.trips = int(p.Doubles[column])
			return out, nil
		}
	}
	return out, fmt.Errorf("no data point for the new order among %d", len(points))
}

// benchPoint is a data point as bench/latency/go.mjs hands it back.
type benchPoint struct {
	Blobs   []string  `json:"blobs"`
	Doubles []float64 `json:"doubles"`
}

// benchPoints returns the data points recorded since the last call, and
// has the subject record them from now on.
func benchPoints(ctx context.Context, url string) ([]benchPoint, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url+"/__bench/points", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var points []benchPoint
	if err := json.NewDecoder(resp.Body).Decode(&points); err != nil {
		return nil, fmt.Errorf("reading the recorded data points: %w", err)
	}
	return points, nil
}

// tripsTable reports each Go subject's round trips on the response path
// against its mode's floor.
func (r *report) tripsTable(b *strings.Builder) {
	if len(r.trips) == 0 {
		return
	}
	b.WriteString("## Round trips on a new order's response path\n\n")
	b.WriteString("Storage round trips before the answer (the request's data point); the commit follows the response, but the stand-in's over KV precedes it. The bench fails above the floor.\n\n")
	b.WriteString("| Worker | round trips | floor |\n|---|---|---|\n")
	for _, t := range r.trips {
		fmt.Fprintf(b, "| %s | %d | %d |\n", t.subject, t.trips, t.most)
	}
	b.WriteString("\n")
}

// tripsOverFloor reports whether any subject made more round trips than
// its floor.
func (r *report) tripsOverFloor() bool {
	for _, t := range r.trips {
		if t.trips > t.most {
			return true
		}
	}
	return false
}
