package metrics_test

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/metrics"
)

// recorder is a Dataset that keeps every point.
type recorder struct{ points [][3]any }

func (r *recorder) WriteDataPoint(indexes, blobs []string, doubles []float64) error {
	r.points = append(r.points, [3]any{indexes, blobs, doubles})
	return nil
}

func TestPointFields(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p       metrics.Point
		indexes []string
		blobs   []string
		doubles []float64
	}{
		{"a replay, every double in its column", metrics.Point{Client: "desk-a", Outcome: metrics.Replay, Mode: "kv", Status: 200, Event: metrics.Submit,
			Took: 3500 * time.Microsecond, Gateway: 40 * time.Millisecond, StorageCalls: 2, Attempts: 1, SinceAccepted: 90 * time.Second, SettledAfter: 2 * time.Second, GatewayCalls: 1},
			[]string{"desk-a"}, []string{"replay", "kv", "200", "submit"}, []float64{3.5, 40, 2, 1, 90000, 2000, 1}},
		{"a settle attempt has no status", metrics.Point{Client: "desk-a", Outcome: metrics.Settled, Mode: "ledger", Event: metrics.Settle},
			[]string{"desk-a"}, []string{"settled", "ledger", "", "settle"}, []float64{0, 0, 0, 0, 0, 0, 0}},
		{"the open Worker's client is no index", metrics.Point{Outcome: metrics.New, Mode: "kv", Status: 201, Event: metrics.Submit},
			nil, []string{"new", "kv", "201", "submit"}, []float64{0, 0, 0, 0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r recorder
			if err := tc.p.Write(&r); err != nil {
				t.Fatal(err)
			}
			want := [3]any{tc.indexes, tc.blobs, tc.doubles}
			if len(r.points) != 1 || !reflect.DeepEqual(r.points[0], want) {
				t.Errorf("Write(%+v) wrote %v, want %v", tc.p, r.points, want)
			}
		})
	}
}

func TestColumnsInTheirOrder(t *testing.T) {
	want := []metrics.Column{
		{"index1", "client"},
		{"blob1", "outcome"}, {"blob2", "mode"}, {"blob3", "status"}, {"blob4", "event"},
		{"double1", "ms"}, {"double2", "gateway_ms"}, {"double3", "storage_calls"}, {"double4", "attempts"},
		{"double5", "since_accepted_ms"}, {"double6", "settled_after_ms"}, {"double7", "gateway_calls"},
	}
	if got := metrics.Columns(); !reflect.DeepEqual(got, want) {
		t.Errorf("Columns() = %v, want %v", got, want)
	}
	// Every column is written, and nothing more.
	_, blobs, doubles := metrics.Point{Client: "c"}.Fields()
	if n := 1 + len(blobs) + len(doubles); n != len(want) {
		t.Errorf("a point has %d fields, the schema %d columns", n, len(want))
	}
}

func TestEventOf(t *testing.T) {
	for method, want := range map[string]metrics.Event{"POST": metrics.Submit, "GET": metrics.Lookup, "OPTIONS": metrics.Other, "PUT": metrics.Other, "post": metrics.Other} {
		if got := metrics.EventOf(method); got != want {
			t.Errorf("EventOf(%q) = %q, want %q", method, got, want)
		}
	}
}

func TestTally(t *testing.T) {
	if metrics.TallyFrom(context.Background()) != nil {
		t.Fatal("a context without a Tally has one")
	}
	var none *metrics.Tally
	none.AddStorageCall() // a nil Tally counts nothing, and does not panic
	none.AddGateway(time.Second)

	ctx, tally := metrics.WithTally(context.Background())
	if metrics.TallyFrom(ctx) != tally {
		t.Fatal("TallyFrom does not return WithTally's Tally")
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			metrics.TallyFrom(ctx).AddStorageCall()
			metrics.TallyFrom(ctx).AddGateway(5 * time.Millisecond)
		}()
	}
	wg.Wait()
	if tally.StorageCalls() != 10 || tally.Gateway() != 50*time.Millisecond {
		t.Errorf("tally = %d calls, %v; want 10 and 50ms", tally.StorageCalls(), tally.Gateway())
	}
}

// TestDoubleIndex checks that each double is found at its place among the
// columns' doubles, and an unknown name nowhere.
func TestDoubleIndex(t *testing.T) {
	doubles := 0
	for _, c := range metrics.Columns() {
		if !strings.HasPrefix(c.Name, "double") {
			continue
		}
		if got := metrics.DoubleIndex(c.Field); got != doubles {
			t.Errorf("DoubleIndex(%q) = %d, want %d", c.Field, got, doubles)
		}
		doubles++
	}
	if got := metrics.DoubleIndex("no_such_field"); got != -1 {
		t.Errorf("DoubleIndex of an unknown field = %d, want -1", got)
	}
}
