package sim

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/edge-orders/edge-orders/intake"
)

// omsTimeout is the gateway's timeout (config.DefaultOMSTimeout).
const omsTimeout = 5 * time.Second

var (
	errOMSUnavailable = errors.New("sim: OMS answered 503")
	errOMSTimeout     = errors.New("sim: OMS call timed out")
	errOMSDropped     = errors.New("sim: connection to the OMS lost")
)

// oms is the order-management system: it places each order id once and
// answers a repeated order id with its first outcome, whatever the call
// carries.
type oms struct {
	w      *world
	orders map[string]*omsOrder
	calls  []*gatewayCall
	// open are the calls in progress, and last the latest call, per key.
	open map[keyName][]*gatewayCall
	last map[keyName]*gatewayCall
}

// omsOrder is an order the OMS acted on.
type omsOrder struct {
	key      keyName
	fp       string
	accepted bool
	at       time.Time
}

// gatewayCall is one call of the gateway, as the Worker made it.
type gatewayCall struct {
	key        keyName
	orderID    string
	fp         string
	acceptedAt time.Time
	inst       int // -1: the ledger's alarm; -2: before the history
	gen        int
	start, end time.Time
	open       bool
	by         *actor
	// returned is true once Place returned to the Worker: its caller then
	// remembers the claim (the opened set, the receipt cache).
	returned bool
}

func newOMS(w *world) *oms {
	return &oms{w: w, orders: make(map[string]*omsOrder), open: make(map[keyName][]*gatewayCall), last: make(map[keyName]*gatewayCall)}
}

// record adds call, in progress unless it already ended.
func (o *oms) record(call *gatewayCall) {
	o.calls = append(o.calls, call)
	o.last[call.key] = call
	if call.open {
		o.open[call.key] = append(o.open[call.key], call)
	}
}

// end ends call.
func (o *oms) end(call *gatewayCall) {
	if !call.open {
		return
	}
	call.open, call.end = false, o.w.now()
	o.open[call.key] = slices.DeleteFunc(o.open[call.key], func(c *gatewayCall) bool { return c == call })
}

// act places p's order id if it is new: accepted, or rejected when the
// history's OMS rejects it.
func (o *oms) act(key keyName, p intake.Placement) *omsOrder {
	if got, ok := o.orders[p.OrderID]; ok {
		return got
	}
	got := &omsOrder{key: key, fp: p.Order.Fingerprint(), accepted: !o.w.fault("oms rejects"), at: o.w.now()}
	o.orders[p.OrderID] = got
	return got
}

// gateway is one isolate's intake.Gateway.
type gateway struct {
	w    *world
	inst int // -1: the ledger's alarm
}

// Place implements intake.Gateway: the call takes some time, and may fail
// before the OMS acts, after it, or hang past the timeout.
func (g gateway) Place(ctx context.Context, p intake.Placement) error {
	w, o := g.w, g.w.oms
	a := w.sched.running
	call := &gatewayCall{key: a.key, orderID: p.OrderID, fp: p.Order.Fingerprint(), acceptedAt: p.AcceptedAt,
		inst: g.inst, gen: a.gen, start: w.now(), open: true, by: a}
	w.countOp("fetch", "")
	w.checkOneCallAtOnce(call)
	o.record(call)
	w.logf("%s: gateway call %s for %s", a.name, p.OrderID, a.key)
	defer o.end(call)
	err := g.place(a, p)
	call.returned = true
	var rejection *intake.Rejection
	if err == nil || errors.As(err, &rejection) {
		w.omsAnswered[orderOf(a.key, p)] = w.now()
	}
	return err
}

// place is the call's course at the OMS.
func (g gateway) place(a *actor, p intake.Placement) error {
	w, o := g.w, g.w.oms
	w.sched.sleep(time.Duration(1+w.choose(3, "oms latency")) * 10 * time.Millisecond)
	if w.omsDown() {
		return w.outageAnswer(a.key, p)
	}
	switch {
	case w.fault("oms 503 before acting"):
		return errOMSUnavailable
	case w.fault("oms hangs"):
		if w.choose(2, "oms hung acts") == 1 {
			o.act(a.key, p)
		}
		w.sched.sleep(omsTimeout)
		return errOMSTimeout
	}
	got := o.act(a.key, p)
	switch {
	case w.fault("oms 503 after acting"):
		return errOMSUnavailable
	case w.fault("oms drops after acting"):
		return errOMSDropped
	case !got.accepted:
		return &intake.Rejection{Reason: "rejected by the simulated OMS"}
	}
	return nil
}
