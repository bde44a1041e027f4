//go:build !js

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// load is one measured run: autocannon's answer, read from its JSON.
type load struct {
	// OK counts the 2xx answers: the expected ones in every scenario here.
	OK     int     `json:"2xx"`
	NotOK  int     `json:"non2xx"`
	Errors int     `json:"errors"`
	Secs   float64 `json:"duration"`
	// Latency holds autocannon's percentiles, in ms.
	Latency struct {
		P50 float64 `json:"p50"`
		P99 float64 `json:"p99"`
	} `json:"latency"`
}

// perSecond is the expected answers per second.
func (l load) perSecond() float64 {
	if l.Secs <= 0 {
		return 0
	}
	return float64(l.OK) / l.Secs
}

// autocannon runs the autocannon load generator (npm, installed with the
// project's tools) against url through bench/load.mjs: conns connections,
// closed-loop, for d. Every request of a new-key run has a key of its own;
// a replay run sends key on every request.
func autocannon(ctx context.Context, url string, conns int, d time.Duration, key string) (load, error) {
	args := []string{filepath.Join("bench", "load.mjs"), url, strconv.Itoa(conns), strconv.Itoa(int(d.Seconds())), order}
	if key != "" {
		args = append(args, key)
	}
	cmd := exec.CommandContext(ctx, filepath.Join("node_modules", ".bin", "node"), args...)
	out, err := cmd.Output()
	if err != nil {
		return load{}, fmt.Errorf("autocannon: %w", err)
	}
	return parseAutocannon(out)
}

// parseAutocannon reads autocannon's --json report.
func parseAutocannon(out []byte) (load, error) {
	var l load
	if err := json.Unmarshal(out, &l); err != nil {
		return load{}, fmt.Errorf("autocannon's report %.200q: %w", out, err)
	}
	return l, nil
}

// order is the body every scenario sends.
const order = `{"symbol":"MSFT","side":"buy","quantity":100}`

// post sends one order under key and returns the status.
func post(ctx context.Context, url, key string) (int, error) {
	status, _, err := send(ctx, http.MethodPost, url, key, order)
	return status, err
}

// send makes one request with key as its Idempotency-Key (a GET with no
// body is a lookup) and returns the status and body.
func send(ctx context.Context, method, url, key, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// contention sends each of keys keys on conns connections at the same
// moment and counts the keys that got more than one 201: orders placed
// twice. No load tool does this check; it is the product's promise.
func contention(ctx context.Context, url, prefix string, keys, conns int) (duplicated int, err error) {
	for k := range keys {
		key := prefix + strconv.Itoa(k)
		created := make([]bool, conns)
		errs := make([]error, conns)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				status, err := post(ctx, url, key)
				created[c], errs[c] = status == http.StatusCreated, err
			}()
		}
		close(start)
		wg.Wait()
		n := 0
		for c := range conns {
			if errs[c] != nil {
				return duplicated, errs[c]
			}
			if created[c] {
				n++
			}
		}
		if n > 1 {
			duplicated++
		}
	}
	return duplicated, nil
}
