package eventlog_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/eventlog"
)

// TestLineJSON checks the JSON of a line.
func TestLineJSON(t *testing.T) {
	tests := []struct {
		name string
		line eventlog.Line
		want string
	}{
		{"created", eventlog.Line{Outcome: "created", Key: "k1", Status: 201, OrderID: "id", Millis: 12},
			`{"outcome":"created","key":"k1","orderId":"id","status":201,"ms":12}`},
		{"client comes before the key", eventlog.Line{Outcome: "replayed", Client: "alice", Key: "k1", Status: 200, OrderID: "id", Millis: 3},
			`{"outcome":"replayed","client":"alice","key":"k1","orderId":"id","status":200,"ms":3}`},
		{"empty fields are left out", eventlog.Line{Outcome: "missing_idempotency_key", Status: 400},
			`{"outcome":"missing_idempotency_key","status":400,"ms":0}`},
		{"a hostile key stays one JSON string", eventlog.Line{Outcome: "in_progress", Key: "a\"b\\c\n{", Status: 409, Error: "x"},
			`{"outcome":"in_progress","key":"a\"b\\c\n{","error":"x","status":409,"ms":0}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.line.AppendJSON(nil)
			if string(got) != tc.want {
				t.Errorf("AppendJSON(nil) = %s, want %s", got, tc.want)
			}
			if !json.Valid(got) {
				t.Errorf("AppendJSON(nil) = %s is not valid JSON", got)
			}
			if got := string(tc.line.AppendJSON([]byte("prefix "))); got != "prefix "+tc.want {
				t.Errorf("AppendJSON(prefix) = %s, want the line appended", got)
			}
		})
	}
}

// TestLevels checks which lines each level keeps: Worker events always,
// errors always, orders placed unless only errors are kept, replays and
// lookups only at All.
func TestLevels(t *testing.T) {
	lines := []eventlog.Line{
		{Outcome: "auth_disabled"},
		{Outcome: "created", Status: 201},
		{Outcome: "replayed", Status: 200},
		{Outcome: "in_progress", Status: 409},
		{Outcome: "storage_error", Status: 503},
	}
	tests := []struct {
		level eventlog.Level
		want  []string
	}{
		{eventlog.All, []string{"auth_disabled", "created", "replayed", "in_progress", "storage_error"}},
		{eventlog.Orders, []string{"auth_disabled", "created", "in_progress", "storage_error"}},
		{eventlog.Errors, []string{"auth_disabled", "in_progress", "storage_error"}},
	}
	for name, level := range eventlog.LevelNames {
		found := false
		for _, tc := range tests {
			found = found || tc.level == level
		}
		if !found {
			t.Errorf("level %q has no case here", name)
		}
	}
	for _, tc := range tests {
		var buf bytes.Buffer
		sink := eventlog.To(&buf, tc.level)
		for _, l := range lines {
			sink.Log(l)
		}
		var got []string
		for _, raw := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
			var l struct{ Outcome string }
			if err := json.Unmarshal(raw, &l); err != nil {
				t.Fatalf("level %d wrote %q: %v", tc.level, raw, err)
			}
			got = append(got, l.Outcome)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("level %d kept %v, want %v", tc.level, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("level %d kept %v, want %v", tc.level, got, tc.want)
			}
		}
	}
}

// TestLongFieldsAreBounded: a 100,000-byte invalid key once made a 100 KB
// log line. Every field is cut to MaxFieldBytes at a character boundary.
func TestLongFieldsAreBounded(t *testing.T) {
	tests := []struct {
		name, value string
		wantPrefix  string
	}{
		{"a huge ASCII key", strings.Repeat("k", 100_000), strings.Repeat("k", eventlog.MaxFieldBytes)},
		{"a multibyte character across the limit", strings.Repeat("k", eventlog.MaxFieldBytes-1) + "é" + strings.Repeat("k", 10), strings.Repeat("k", eventlog.MaxFieldBytes-1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			line := eventlog.Line{Outcome: "invalid_idempotency_key", Key: tc.value, Error: tc.value, Status: 400}
			b := line.AppendJSON(nil)
			if len(b) > 3*eventlog.MaxFieldBytes {
				t.Fatalf("line is %d bytes, want about two bounded fields", len(b))
			}
			var got struct{ Key, Error string }
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("line %s: %v", b, err)
			}
			want := tc.wantPrefix + "...(" + strconv.Itoa(len(tc.value)) + " bytes)"
			if got.Key != want || got.Error != want {
				t.Errorf("key = %q, want %q", got.Key, want)
			}
		})
	}
	short := eventlog.Line{Outcome: "created", Key: strings.Repeat("k", 255)}
	if b := short.AppendJSON(nil); !strings.Contains(string(b), strings.Repeat("k", 255)+`"`) {
		t.Errorf("a valid 255-byte key was cut: %s", b)
	}
}

// twoLevels is an ErrorWriter that keeps each level's lines apart.
type twoLevels struct{ log, errors bytes.Buffer }

func (w *twoLevels) Write(p []byte) (int, error)      { return w.log.Write(p) }
func (w *twoLevels) WriteError(p []byte) (int, error) { return w.errors.Write(p) }

// TestErrorLinesGoToTheErrorLevel: alerts and answers of 500 and above
// go through WriteError, every other line through Write, one call each;
// a writer without an error level gets them all.
func TestErrorLinesGoToTheErrorLevel(t *testing.T) {
	lines := []struct {
		line  eventlog.Line
		error bool
	}{
		{eventlog.Line{Outcome: "created", Status: 201}, false},
		{eventlog.Line{Outcome: "invalid_order", Status: 422}, false},
		{eventlog.Line{Outcome: "outcome_unknown", Status: 503}, true},
		{eventlog.Line{Outcome: "internal_error", Status: 500}, true},
		{eventlog.Line{Outcome: "order_unresolved", Alert: true}, true},
		{eventlog.Line{Outcome: "auth_disabled", Error: "no API_TOKENS secret"}, false},
		{eventlog.Line{Outcome: "purge", Action: "purge", Admin: "ops", Status: 200}, false},
	}
	w := &twoLevels{}
	log := eventlog.To(w, eventlog.All)
	for _, l := range lines {
		log.Log(l.line)
	}
	for _, l := range lines {
		want := `{"outcome":"` + l.line.Outcome + `"`
		if inErrors, inLog := strings.Contains(w.errors.String(), want), strings.Contains(w.log.String(), want); inErrors != l.error || inLog == l.error {
			t.Errorf("%s: at error level %v, at log level %v; want error level %v only", l.line.Outcome, inErrors, inLog, l.error)
		}
	}
	var plain bytes.Buffer
	log = eventlog.To(&plain, eventlog.All)
	for _, l := range lines {
		log.Log(l.line)
	}
	if n := strings.Count(plain.String(), "\n"); n != len(lines) {
		t.Errorf("a writer without an error level got %d lines, want all %d", n, len(lines))
	}
}
