//go:build !js

// Package inspector takes CPU profiles of a Worker under `wrangler dev`
// through the V8 inspector protocol that workerd speaks (Profiler.start
// and Profiler.stop), and sums them up by function: self time, with the
// names Go compiled into the wasm module's name section.
package inspector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/profiler"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
)

// Conn is a connection to one inspector target.
type Conn struct {
	ws *remote.Conn

	mu      sync.Mutex
	next    int64
	waiting map[int64]chan *cdproto.Message
	err     error
}

// Connect opens the first target that the inspector at base
// (http://127.0.0.1:PORT, wrangler dev's --inspector-port) lists. ctx
// bounds the connecting; the connection lasts until Close.
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
	// wrangler's inspector proxy refuses a handshake that has a
	// User-Agent (net/http sends one) but no Origin on its allow list,
	// which has the loopback hosts: the inspector's own address will do.
	ws, err := remote.DialContext(ctx, targets[0].WebSocketDebuggerURL,
		remote.WithConnHTTPHeader(http.Header{"Origin": {base}}))
	if err != nil {
		return nil, fmt.Errorf("inspector: %w", err)
	}
	c := &Conn{ws: ws, waiting: map[int64]chan *cdproto.Message{}}
	go c.readLoop()
	return c, nil
}

// readLoop hands each reply to its call, matched by id alone: workerd
// answers Profiler.enable with the call's method and params echoed and
// no result, which chromedp's Browser would take for an event. Events
// are dropped.
func (c *Conn) readLoop() {
	for {
		var msg cdproto.Message
		err := c.ws.Read(context.Background(), &msg)
		var syntax *jsonv2.SyntacticError
		if errors.As(err, &syntax) || errors.Is(err, remote.ErrInvalidMessage) {
			continue // one bad message, not a broken connection
		}
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
		if msg.ID == 0 {
			continue
		}
		c.mu.Lock()
		ch, ok := c.waiting[msg.ID]
		delete(c.waiting, msg.ID)
		c.mu.Unlock()
		if ok {
			ch <- &msg
		}
	}
}

// Call sends method with params (nil for none) and decodes its result
// into result (nil to drop it), both with encoding/json. The target's
// error reply comes back wrapped, as a *cdproto.Error.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	var p any // nil: no "params" at all
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return fmt.Errorf("inspector: %s: %w", method, err)
		}
		p = jsonv2.Value(b)
	}
	var r jsonv2.Value
	if err := c.call(ctx, method, p, &r); err != nil {
		return err
	}
	if result == nil {
		return nil
	}
	return json.Unmarshal(r, result)
}

// call sends method with params and decodes its result into result
// (nil, or no result sent, to leave it), both with cdproto's JSON.
func (c *Conn) call(ctx context.Context, method string, params, result any) error {
	msg := &cdproto.Message{Method: cdproto.MethodType(method)}
	if params != nil {
		b, err := jsonv2.Marshal(params, chromedp.DefaultMarshalOptions)
		if err != nil {
			return fmt.Errorf("inspector: %s: %w", method, err)
		}
		msg.Params = b
	}
	ch := make(chan *cdproto.Message, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return fmt.Errorf("inspector: %s: %w", method, c.err)
	}
	c.next++
	msg.ID = c.next
	c.waiting[msg.ID] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.waiting, msg.ID)
		c.mu.Unlock()
	}
	if err := c.ws.Write(ctx, msg); err != nil {
		forget()
		return fmt.Errorf("inspector: %s: %w", method, err)
	}
	select {
	case r, ok := <-ch:
		switch {
		case !ok:
			return fmt.Errorf("inspector: %s: the connection closed", method)
		case r.Error != nil:
			return fmt.Errorf("inspector: %s: %w", method, r.Error)
		case result != nil && len(r.Result) > 0:
			if err := jsonv2.Unmarshal(r.Result, result, chromedp.DefaultUnmarshalOptions); err != nil {
				return fmt.Errorf("inspector: %s: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		forget()
		return ctx.Err()
	}
}

// callCommand runs one of cdproto's commands.
func callCommand[P, R any](ctx context.Context, c *Conn, cmd cdp.Command[P, R], params P) (R, error) {
	var r R
	err := c.call(ctx, cmd.Method, params, &r)
	return r, err
}

// Close closes the connection.
func (c *Conn) Close() error { return c.ws.Close() }

// StartProfiling starts the CPU profiler, sampling every interval.
func (c *Conn) StartProfiling(ctx context.Context, interval time.Duration) error {
	if _, err := callCommand(ctx, c, profiler.Enable, cdp.Empty{}); err != nil {
		return err
	}
	if _, err := callCommand(ctx, c, profiler.SetSamplingInterval, profiler.SetSamplingIntervalParams{Interval: interval.Microseconds()}); err != nil {
		return err
	}
	_, err := callCommand(ctx, c, profiler.Start, cdp.Empty{})
	return err
}

// stopKeepingRaw is profiler.Stop with the profile kept as V8 sent it,
// for Profile.Raw.
var stopKeepingRaw = cdp.Command[cdp.Empty, struct {
	Profile jsonv2.Value `json:"profile"`
}]{Method: profiler.Stop.Method}

// StopProfiling stops the profiler and returns what it sampled.
func (c *Conn) StopProfiling(ctx context.Context) (*Profile, error) {
	r, err := callCommand(ctx, c, stopKeepingRaw, cdp.Empty{})
	if err != nil {
		return nil, err
	}
	return decodeProfile(r.Profile)
}

// decodeProfile decodes a Profiler.Profile as cdproto does, keeping raw.
func decodeProfile(raw []byte) (*Profile, error) {
	p := &Profile{Raw: json.RawMessage(raw)}
	if err := jsonv2.Unmarshal(raw, &p.Profile, chromedp.DefaultUnmarshalOptions); err != nil {
		return nil, fmt.Errorf("inspector: the profile: %w", err)
	}
	return p, nil
}

// Profile is V8's CPU profile (Profiler.Profile): a tree of call
// frames, the node each sample fell in, and the µs before each sample.
type Profile struct {
	profiler.Profile
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
	names := make(map[int64]string, len(p.Nodes))
	for _, n := range p.Nodes {
		if n == nil {
			continue
		}
		var f runtime.CallFrame // none sent: (native)
		if n.CallFrame != nil {
			f = *n.CallFrame
		}
		name := f.FunctionName
		if name == "" {
			name = fmt.Sprintf("(anonymous) %s:%d", path.Base(f.URL), f.LineNumber+1)
		}
		if f.URL == "" && f.FunctionName == "" {
			name = Native
		}
		if strings.HasPrefix(f.URL, "wasm://") {
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
