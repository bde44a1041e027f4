package ledger

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/order"
)

// ms is a time as the wire carries it: Unix milliseconds, read back by
// time.UnixMilli, so that a round trip compares equal with ==.
func ms(n int64) time.Time { return time.UnixMilli(n) }

// hardOrder is an order whose symbol has a lone surrogate (kept in WTF-8,
// from a \ud800 escape), a quote and a backslash, and whose quantity is
// the largest the Worker accepts: what JSON must carry exactly.
func hardOrder(t *testing.T) order.Order {
	t.Helper()
	o, err := order.Parse([]byte(`{"symbol":"\ud800\"Q\\é","side":"sell","quantity":9007199254740991}`))
	if err != nil {
		t.Fatal(err)
	}
	if o.Quantity != order.MaxQuantity || o.Symbol != "\xed\xa0\x80\"Q\\é" {
		t.Fatalf("the test's order is %+v, want a lone surrogate in its symbol and quantity 2^53-1", o)
	}
	return o
}

func TestClaimRoundTrips(t *testing.T) {
	o := hardOrder(t)
	tests := []struct {
		name string
		key  intake.Key
		c    intake.Claim
	}{
		{"a key of the open Worker, nothing else", intake.Key{ID: "k"}, intake.Claim{}},
		{"a new claim with its order", intake.Key{Client: "desk-a", ID: "a:b \"c\""}, intake.Claim{
			Token: "t1", Fingerprint: o.Fingerprint(), Order: o, OrderID: "order-1", AcceptedAt: ms(1_773_500_966_535),
			Lease: time.Minute, KeepUntil: ms(1_773_673_766_535)}},
		{"a release left open, due for the settler", intake.Key{Client: "desk-a", ID: "k"}, intake.Claim{
			Token: "t2", Fingerprint: "fp", Order: order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 1},
			OrderID: "order-2", AcceptedAt: ms(1), Lease: 1500 * time.Millisecond, KeepUntil: ms(2), Stage: intake.StageSent,
			Attempts: 7, NextAttempt: ms(3)}},
		{"an unresolved release", intake.Key{ID: "k"}, intake.Claim{Token: "t3", OrderID: "order-3", Stage: intake.StageSent,
			Attempts: 1 << 20, GiveUp: intake.GivenUp}},
		{"a release awaiting the give-up's check", intake.Key{ID: "k"}, intake.Claim{Token: "t7", OrderID: "order-7", Stage: intake.StageSent,
			Attempts: 4, NextAttempt: ms(70), GiveUp: intake.AwaitingCheck}},
		{"the settler's claim", intake.Key{Client: "c", ID: "k"}, intake.Claim{Token: "t4", Lease: time.Minute, By: intake.RoleSettler}},
		{"an operator's claim", intake.Key{Client: "c", ID: "k"}, intake.Claim{Token: "t5", Lease: time.Minute, By: intake.RoleResolver}},
		{"an adoption's claim", intake.Key{Client: "c", ID: "k"}, intake.Claim{Token: "t6", Fingerprint: "fp",
			Order: order.Order{Symbol: "AAPL", Side: order.Sell, Quantity: 2}, OrderID: "order-6", Stage: intake.StageTentative, By: intake.RoleAdopter}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := encodeClaim(tc.key, tc.c)
			key, c, err := decodeClaim(b)
			if err != nil {
				t.Fatalf("decodeClaim(%s): %v", b, err)
			}
			if key != tc.key {
				t.Errorf("key = %+v, want %+v (from %s)", key, tc.key, b)
			}
			if !reflect.DeepEqual(c, tc.c) {
				t.Errorf("claim = %+v,\nwant %+v (from %s)", c, tc.c, b)
			}
		})
	}
	t.Run("an operator's claim reads as a settler's claim to an object of the version before", func(t *testing.T) {
		// That version knew the settling and resolving flags alone.
		r, err := read(encodeClaim(intake.Key{ID: "k"}, intake.Claim{Token: "t", By: intake.RoleResolver}))
		if err != nil || !r.flag(mSettling) || !r.flag(mResolving) {
			t.Errorf("settling, resolving = %v, %v (%v); want both", r.flag(mSettling), r.flag(mResolving), err)
		}
	})
	t.Run("an order without a fingerprint does not travel", func(t *testing.T) {
		// A claim for a body that is not an order has neither.
		_, c, err := decodeClaim(encodeClaim(intake.Key{ID: "k"}, intake.Claim{Token: "t", Order: o}))
		if err != nil || c.Order != (order.Order{}) {
			t.Errorf("decoded order = %+v, %v; want none", c.Order, err)
		}
	})
}

func TestCommitRoundTrips(t *testing.T) {
	receipt := order.Receipt{OrderID: "order-1", Status: order.StatusRejected, Order: hardOrder(t), AcceptedAt: ms(1_773_500_966_535),
		Reason: "halted \"now\""}.JSON()
	key := intake.Key{Client: "desk-a", ID: "k"}
	res := intake.Result{Body: receipt, Rejected: true, Fingerprint: "fp", TTL: 24 * time.Hour}
	keep := ms(1_773_673_766_535)
	gotKey, c, got, err := decodeCommit(encodeCommit(key, intake.Claim{Token: "t", OrderID: "ignored", KeepUntil: keep}, res))
	if err != nil {
		t.Fatal(err)
	}
	// KeepUntil crosses: Object.Commit keeps the outcome at least as long.
	if gotKey != key || c.Token != "t" || !c.KeepUntil.Equal(keep) || !reflect.DeepEqual(got, res) {
		t.Errorf("decodeCommit = %+v, %+v, %+v; want %+v, token t, KeepUntil %v, %+v", gotKey, c, got, key, keep, res)
	}
}

func TestRecordRoundTrips(t *testing.T) {
	o := hardOrder(t)
	receipt := order.Receipt{OrderID: "order-1", Status: order.StatusAccepted, Order: o, AcceptedAt: ms(1_773_500_966_535)}.JSON()
	tests := []struct {
		name string
		rec  intake.Record
	}{
		{"absent", intake.Record{State: intake.Absent}},
		{"held by a reference claim", intake.Record{State: intake.Held}},
		{"held, with the order", intake.Record{State: intake.Held, Fingerprint: o.Fingerprint(), OrderID: "order-1",
			AcceptedAt: ms(10), Order: o, HasOrder: true, NextAttempt: ms(20)}},
		{"a receipt", intake.Record{State: intake.Stored, Body: receipt, Fingerprint: o.Fingerprint(), Expires: ms(30)}},
		{"a rejection", intake.Record{State: intake.Stored, Body: []byte(`{"status":"rejected","reason":"\"x\""}`), Rejected: true, Expires: ms(30)}},
		{"claimed", intake.Record{State: intake.Held, Took: intake.EventClaim, Fingerprint: "fp"}},
		{"taken over", intake.Record{State: intake.Held, Took: intake.EventTakeOver, Fingerprint: "fp", OrderID: "order-2", AcceptedAt: ms(40),
			Order: o, HasOrder: true, Attempts: 3}},
		{"open, being settled", intake.Record{State: intake.Open, Fingerprint: "fp", OrderID: "order-3", AcceptedAt: ms(50),
			Order: o, HasOrder: true, Attempts: 4, NextAttempt: ms(60)}},
		{"open, awaiting the give-up's check", intake.Record{State: intake.Open, OrderID: "order-6", AcceptedAt: ms(50), Attempts: 9,
			NextAttempt: ms(80), GiveUp: intake.AwaitingCheck}},
		{"open, unresolved", intake.Record{State: intake.Open, OrderID: "order-4", AcceptedAt: ms(50), Attempts: 9, GiveUp: intake.GivenUp}},
		{"with its written phase", intake.Record{State: intake.Open, OrderID: "order-5", AcceptedAt: ms(50),
			GiveUp: intake.GivenUp, WrittenPhase: intake.PhaseUnresolved}},
		{"a receipt with its written phase", intake.Record{State: intake.Stored, Body: receipt, Expires: ms(30), WrittenPhase: intake.PhaseStored}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := encodeRecord(tc.rec)
			got, err := decodeRecord(b)
			if err != nil {
				t.Fatalf("decodeRecord(%s): %v", b, err)
			}
			if !reflect.DeepEqual(got, tc.rec) {
				t.Errorf("record = %+v,\nwant %+v (from %s)", got, tc.rec, b)
			}
		})
	}
}

// TestATakeoverIsOnTheWireAsTheVersionBeforeWroteIt: an object and a
// Worker of different versions meet during a deployment, and the version
// before said a claim with state 3, and a takeover with 3 and the key's
// order id, and numbered the others as they still are.
func TestATakeoverIsOnTheWireAsTheVersionBeforeWroteIt(t *testing.T) {
	if got := string(encodeRecord(intake.Record{State: intake.Held, Took: intake.EventTakeOver, OrderID: "o"})); !strings.Contains(got, `"state":3,`) {
		t.Errorf("a takeover encodes as %s, want state 3", got)
	}
	for answer, want := range map[string]intake.Record{
		`{"state":3,"orderId":"o"}`: {State: intake.Held, Took: intake.EventTakeOver, OrderID: "o"},
		`{"state":3}`:               {State: intake.Held, Took: intake.EventClaim},
		`{"state":0}`:               {State: intake.Absent},
		`{"state":1}`:               {State: intake.Held},
		`{"state":2,"receipt":"r"}`: {State: intake.Stored, Body: []byte("r")},
		`{"state":4,"orderId":"o"}`: {State: intake.Open, OrderID: "o"},
	} {
		if rec, err := decodeRecord([]byte(answer)); err != nil || !reflect.DeepEqual(rec, want) {
			t.Errorf("decodeRecord(%s) = %+v, %v; want %+v", answer, rec, err, want)
		}
	}
}

// TestDecodeRecordRefusesWhatItCannotRead: an answer the Worker cannot
// read is an error, never a guess: a misread state could hand out a
// receipt that is not stored, or place an order without a claim.
func TestDecodeRecordRefusesWhatItCannotRead(t *testing.T) {
	for _, answer := range []string{
		``,
		`not json`,
		`null`,
		`[]`,
		`"Stored"`,
		`{}`,
		`{"state":"2","receipt":"r"}`,
		`{"state":null}`,
		`{"state":2}`,
		`{"state":2,"receipt":7}`,
		`{"state":4}`,
		`{"state":4,"orderId":5}`,
		`{"state":5}`,
		`{"state":-1}`,
		`{"state":256}`,
		`{"state":1.5}`,
		`{"state":2,"receipt":"r"`,
	} {
		t.Run(answer, func(t *testing.T) {
			if rec, err := decodeRecord([]byte(answer)); !errors.Is(err, errNotRecord) {
				t.Errorf("decodeRecord(%s) = %+v, %v; want errNotRecord", answer, rec, err)
			}
		})
	}
}

// TestDecodeCommittedTrustsOnlyCommitted: only an explicit committed is a
// commit; anything else a Worker cannot read is an error, so no receipt is
// handed out on it.
func TestDecodeCommittedTrustsOnlyCommitted(t *testing.T) {
	tests := []struct {
		answer string
		want   error // nil: committed; errUnread: neither committed nor lost
	}{
		{string(encodeCommitted(nil)), nil},
		{`{"committed":1}`, nil},
		{string(encodeCommitted(intake.ErrLostClaim)), intake.ErrLostClaim},
		{`{"lost":1}`, intake.ErrLostClaim},
		{`{"lost":1,"committed":1}`, intake.ErrLostClaim},
		{`{}`, errUnread},
		{`{"committed":0}`, errUnread},
		{`{"committed":true}`, errUnread},
		{`{"committed":"1"}`, errUnread},
		{`{"ok":1}`, errUnread},
		{`null`, errUnread},
		{`1`, errUnread},
		{``, errUnread},
		{`{"committed":1`, errUnread},
	}
	for _, tc := range tests {
		t.Run(tc.answer, func(t *testing.T) {
			err := decodeCommitted([]byte(tc.answer))
			switch {
			case tc.want == nil && err != nil:
				t.Errorf("decodeCommitted(%s) = %v, want committed", tc.answer, err)
			case tc.want == errUnread && (err == nil || errors.Is(err, intake.ErrLostClaim)):
				t.Errorf("decodeCommitted(%s) = %v, want an error that is neither a commit nor ErrLostClaim", tc.answer, err)
			case tc.want == intake.ErrLostClaim && !errors.Is(err, intake.ErrLostClaim):
				t.Errorf("decodeCommitted(%s) = %v, want ErrLostClaim", tc.answer, err)
			}
		})
	}
}

// errUnread stands for an answer that says neither committed nor lost.
var errUnread = errors.New("unread")

// FuzzDecodeRecord: whatever an answer holds, decodeRecord either refuses
// it or returns a record of a known state that carries what that state
// needs, and what it accepts reads back as itself.
func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte(`{"state":2,"receipt":"r","rejected":1}`))
	f.Add([]byte(`{"state":4,"orderId":"o","symbol":"\ud800","side":"buy","quantity":9007199254740991}`))
	f.Add([]byte(`{"state":256}`))
	f.Add([]byte(`{"state":3,"orderId":"o"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := decodeRecord(b)
		if err != nil {
			return
		}
		switch {
		case rec.State > intake.Open:
			t.Fatalf("decodeRecord(%q) accepted state %d", b, rec.State)
		case rec.Took == intake.EventTakeOver && rec.OrderID == "":
			t.Fatalf("decodeRecord(%q) accepted a takeover without an order id", b)
		case rec.State == intake.Stored && rec.Body == nil:
			t.Fatalf("decodeRecord(%q) accepted a receipt without a body", b)
		case rec.State == intake.Open && rec.OrderID == "":
			t.Fatalf("decodeRecord(%q) accepted an open key without an order id", b)
		}
		enc := encodeRecord(rec)
		again, err := decodeRecord(enc)
		if err != nil || string(encodeRecord(again)) != string(enc) {
			t.Fatalf("%q read as %+v, written as %s, read back as %+v, %v", b, rec, enc, again, err)
		}
	})
}

// TestAnAdoptionReleasedByTheVersionBeforeStaysOpen: during a deployment
// a Worker of the version before may adopt a key KV left open against an
// object of this one. Its release carried sent and tentative both (its
// adoption set Sent on a claim still Tentative), and its object left the
// key open for the alarm, as sent: this one must too. The documents are
// byte for byte what the version before wrote.
func TestAnAdoptionReleasedByTheVersionBeforeStaysOpen(t *testing.T) {
	const claimDoc = `{"client":"c","id":"k","token":"adopt-1","fingerprint":"fp","symbol":"AAPL","side":"buy","quantity":1,"orderId":"kv-order","acceptedAt":1000,"lease":60000,"keepUntil":100000000,"adopting":1,"tentative":1}`
	const releaseDoc = `{"client":"c","id":"k","token":"adopt-1","fingerprint":"fp","symbol":"AAPL","side":"buy","quantity":1,"orderId":"kv-order","acceptedAt":1000,"lease":60000,"keepUntil":100000000,"adopting":1,"sent":1,"attempts":2,"nextAttempt":2000,"tentative":1}`
	m := NewMemoryStore()
	m.Now = func() time.Time { return time.UnixMilli(1500) }
	key, c, err := decodeClaim([]byte(claimDoc))
	if err != nil || c.Stage != intake.StageTentative {
		t.Fatalf("decodeClaim(the claim) = %+v, %v; want a tentative claim", c, err)
	}
	if rec, err := m.obj.Claim(key, c); err != nil || rec.Took != intake.EventClaim {
		t.Fatalf("Claim = %+v, %v; want a claim", rec, err)
	}
	if key, c, err = decodeClaim([]byte(releaseDoc)); err != nil || c.Stage != intake.StageSent {
		t.Fatalf("decodeClaim(the release) = %+v, %v; want it sent", c, err)
	}
	if err := m.obj.Release(key, c); err != nil {
		t.Fatal(err)
	}
	if rec := m.obj.Lookup(key); rec.State != intake.Open || rec.OrderID != "kv-order" {
		t.Fatalf("after the adoption's release the key is %+v; want Open with kv-order, due for the alarm", rec)
	}
}
