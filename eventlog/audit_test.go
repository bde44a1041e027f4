package eventlog_test

import (
	"bytes"
	"testing"

	"github.com/edge-orders/edge-orders/eventlog"
)

// TestAuditLine: an admin action is written at level audit with its
// fields, and kept at every level, even as a 200.
func TestAuditLine(t *testing.T) {
	line := eventlog.Line{Outcome: "resolve", Client: "desk", Key: "k", Status: 200, OrderID: "id",
		Action: "resolve", Admin: "oncall", Before: "unknown", After: "accepted", Note: "ticket 7"}
	want := `{"outcome":"resolve","client":"desk","key":"k","orderId":"id","action":"resolve","admin":"oncall",` +
		`"before":"unknown","after":"accepted","note":"ticket 7","status":200,"level":"audit","ms":0}`
	if got := string(line.AppendJSON(nil)); got != want {
		t.Errorf("AppendJSON = %s, want %s", got, want)
	}
	for name, level := range eventlog.LevelNames {
		var buf bytes.Buffer
		eventlog.To(&buf, level).Log(line)
		if buf.Len() == 0 {
			t.Errorf("level %s dropped an audit line", name)
		}
	}
}
