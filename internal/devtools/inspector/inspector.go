//go:build !js

// Package inspector takes CPU profiles of a Worker under `wrangler dev`
// through the V8 inspector protocol that workerd speaks (Profiler.start
// and Profiler.stop), and sums them up by function: self time, with the
// names Go compiled into the wasm module's name section.
package inspector

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Conn is a connection to one inspector target.
type Conn struct {
	ws *wsConn

	mu      sync.Mutex
	next    int
	waiting map[int]chan reply
	err     error
}

type reply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Connect opens the first target that the inspector at base
// (http://127.0.0.1:PORT, wrangler dev's --inspector-port) lists.
func Connect(ctx context.Context, base string) (*Conn, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/json", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var targets []struct {
		WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&targets); err != nil {
		return nil, fmt.Errorf("inspector: %s/json: %w", base, err)
	}
	if len(targets) == 0 || targets[0].WebSocketDebuggerURL == "" {
		return nil, fmt.Errorf("inspector: %s/json lists no target", base)
	}
	ws, err := dialWebSocket(targets[0].WebSocketDebuggerURL)
	if err != nil {
		return nil, err
	}
	c := &Conn{ws: ws, waiting: map[int]chan reply{}}
	go c.readLoop()
	return c, nil
}

// readLoop hands each reply to its call; events are dropped.
func (c *Conn) readLoop() {
	for {
		msg, err := c.ws.readMessage()
		if err != nil {
			c.mu.Lock()
			c.err = err
			for id, ch := range c.waiting {
				close(ch)
				delete(c.waiting, id)
			}
			c.mu.Unlock()
			return
		}
		var m struct {
			ID *int `json:"id"`
			reply
		}
		if json.Unmarshal(msg, &m) != nil || m.ID == nil {
			continue
		}
		c.mu.Lock()
		ch, ok := c.waiting[*m.ID]
		delete(c.waiting, *m.ID)
		c.mu.Unlock()
		if ok {
			ch <- m.reply
		}
	}
}

// Call sends method with params (nil for none) and decodes its result
// into result (nil to drop it).
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return c.err
	}
	c.next++
	id := c.next
	c.waiting[id] = ch
	c.mu.Unlock()
	msg, err := json.Marshal(struct {
		ID     int    `json:"id"`
		Method string `json:"method"`
		Params any    `json:"params,omitempty"`
	}{id, method, params})
	if err != nil {
		return err
	}
	if err := c.ws.writeText(msg); err != nil {
		return err
	}
	select {
	case r, ok := <-ch:
		switch {
		case !ok:
			return fmt.Errorf("inspector: %s: the connection closed", method)
		case r.Error != nil:
			return fmt.Errorf("inspector: %s: %s", method, r.Error.Message)
		case result != nil:
			return json.Unmarshal(r.Result, result)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close closes the connection.
func (c *Conn) Close() error { return c.ws.close() }

// StartProfiling starts the CPU profiler, sampling every interval.
func (c *Conn) StartProfiling(ctx context.Context, interval time.Duration) error {
	if err := c.Call(ctx, "Profiler.enable", nil, nil); err != nil {
		return err
	}
	if err := c.Call(ctx, "Profiler.setSamplingInterval", map[string]int64{"interval": interval.Microseconds()}, nil); err != nil {
		return err
	}
	return c.Call(ctx, "Profiler.start", nil, nil)
}

// StopProfiling stops the profiler and returns what it sampled.
func (c *Conn) StopProfiling(ctx context.Context) (*Profile, error) {
	var r struct {
		Profile json.RawMessage `json:"profile"`
	}
	if err := c.Call(ctx, "Profiler.stop", nil, &r); err != nil {
		return nil, err
	}
	p := &Profile{Raw: r.Profile}
	return p, json.Unmarshal(r.Profile, p)
}

// Profile is V8's CPU profile (Profiler.Profile), the fields read here:
// a tree of call frames, and the node each sample fell in.
type Profile struct {
	Nodes []struct {
		ID        int `json:"id"`
		CallFrame struct {
			FunctionName string `json:"functionName"`
			URL          string `json:"url"`
			LineNumber   int    `json:"lineNumber"` // from 0
		} `json:"callFrame"`
	} `json:"nodes"`
	Samples    []int   `json:"samples"`
	TimeDeltas []int64 `json:"timeDeltas"` // µs before each sample
	// Raw is the profile as V8 sent it: saved as a .cpuprofile file,
	// Chrome's DevTools open it.
	Raw json.RawMessage `json:"-"`
}

// Entry is one function's self time in a profile.
type Entry struct {
	Function string
	Self     time.Duration
	// Share is Self over every sample's time, idle excluded.
	Share float64
}

// WasmPrefix starts the name of every function of a wasm module, as
// SelfTime reports them: a Go function, for the Go Worker.
const WasmPrefix = "wasm "

// Native names the samples in code with neither name nor script: the
// runtime's own, such as workerd dispatching an event.
const Native = "(native)"

// Idle is the name V8 gives the samples where the isolate waited.
const Idle = "(idle)"

// SelfTime sums the profile's samples by the function each fell in,
// largest first, each sample counting for the median interval between
// samples: an interval is longer when the isolate's thread was not
// running (the machine's other work), and would weigh what happened to
// run just before. Idle samples are left out, and so out of every
// share: the shares are of the time the isolate was busy. busy is that
// time.
func (p *Profile) SelfTime() (entries []Entry, busy time.Duration) {
	names := make(map[int]string, len(p.Nodes))
	for _, n := range p.Nodes {
		name := n.CallFrame.FunctionName
		if name == "" {
			name = fmt.Sprintf("(anonymous) %s:%d", path.Base(n.CallFrame.URL), n.CallFrame.LineNumber+1)
		}
		if n.CallFrame.URL == "" && n.CallFrame.FunctionName == "" {
			name = Native
		}
		if strings.HasPrefix(n.CallFrame.URL, "wasm://") {
			name = WasmPrefix + name
		}
		names[n.ID] = name
	}
	interval := medianInterval(p.TimeDeltas)
	self := map[string]time.Duration{}
	for _, node := range p.Samples {
		name := names[node]
		if name == Idle {
			continue
		}
		self[name] += interval
		busy += interval
	}
	for name, d := range self {
		e := Entry{Function: name, Self: d}
		if busy > 0 {
			e.Share = float64(d) / float64(busy)
		}
		entries = append(entries, e)
	}
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].Self != entries[j].Self {
			return entries[i].Self > entries[j].Self
		}
		return entries[i].Function < entries[j].Function
	})
	return entries, busy
}

// medianInterval is the median of the gaps between samples.
func medianInterval(deltas []int64) time.Duration {
	if len(deltas) == 0 {
		return 0
	}
	d := slices.Clone(deltas)
	slices.Sort(d)
	return time.Duration(d[len(d)/2]) * time.Microsecond
}
