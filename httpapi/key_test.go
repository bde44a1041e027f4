package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/eventlog"
	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
)

const uuidKey = "8e03978e-40d5-43e8-bc93-6894a57f9324"

// TestQuotedKeyIsTheSameKey checks the IETF draft's Structured Field string
// form of a key names the same key as the key itself.
func TestQuotedKeyIsTheSameKey(t *testing.T) {
	tests := []struct {
		name          string
		first, second string // header values, as sent
		key           string // the key both name
	}{
		{"quoted UUID then bare UUID replays", `"` + uuidKey + `"`, uuidKey, uuidKey},
		{"bare UUID then quoted UUID replays", uuidKey, `"` + uuidKey + `"`, uuidKey},
		{"quoted UUID twice replays", `"` + uuidKey + `"`, `"` + uuidKey + `"`, uuidKey},
		{`escaped quote names a"b`, `"a\"b"`, `a"b`, `a"b`},
		{`escaped backslash names a\b`, `"a\\b"`, `a\b`, `a\b`},
		{"escapes in a row name both characters", `"\\\""`, `\"`, `\"`},
		{"255 characters quoted is the 255-character key", `"` + strings.Repeat("q", 255) + `"`, strings.Repeat("q", 255), strings.Repeat("q", 255)},
		{"a comma inside a quoted key is part of it", `"a, b"`, `"a, b"`, `a, b`},
		{"an escaped quote before a comma stays inside the key", `"a\", \"b"`, `"a\", \"b"`, `a", "b`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := kv.NewMemoryNamespace()
			var lines []eventlog.Line
			h := httpapi.New(newService(mem), httpapi.Options{Log: logTo(&lines)})

			first := serve(h, request(http.MethodPost, ptr(tc.first), strings.NewReader(validBody)))
			if first.Code != http.StatusCreated {
				t.Fatalf("first = %d %s, want 201", first.Code, first.Body)
			}
			second := serve(h, request(http.MethodPost, ptr(tc.second), strings.NewReader(validBody)))
			check(t, second, response{200, first.Body.String(), map[string]string{"Idempotent-Replay": "true"}})
			// A lookup names the key either way too.
			for _, v := range []string{tc.first, tc.second} {
				looked := serve(h, request(http.MethodGet, ptr(v), nil))
				check(t, looked, response{200, first.Body.String(), map[string]string{"Idempotent-Replay": "true"}})
			}
			if e, err := mem.Get(t.Context(), "result:"+tc.key); err != nil || e.Value != first.Body.String() {
				t.Errorf("result:%s = %s, %v; want the receipt %s", tc.key, e.Value, err, first.Body)
			}
			for i, l := range lines {
				if l.Key != tc.key {
					t.Errorf("log line %d key = %q, want %q", i, l.Key, tc.key)
				}
			}
		})
	}
}

// TestInvalidKeys checks every key the contract refuses is a 400
// invalid_idempotency_key before any storage call, for a submission and a
// lookup alike.
func TestInvalidKeys(t *testing.T) {
	tests := []struct {
		name   string
		header string
	}{
		{"256 characters is invalid", strings.Repeat("k", 256)},
		{"one over MaxIdempotencyKeyBytes is invalid", strings.Repeat("k", httpapi.MaxIdempotencyKeyBytes+1)},
		{"512 characters is invalid", strings.Repeat("k", 512)},
		{"a control character is invalid", "a\x01b"},
		{"a NUL is invalid", "a\x00b"},
		{"a tab is invalid", "a\tb"},
		{"DEL is invalid", "a\x7fb"},
		{"DEL at the end is invalid", "abc\x7f"},
		{"a control character in the middle is invalid", "abc\x01def"},
		{"a tab in the middle is invalid", "abc\tdef"},
		{"non-ASCII at the end is invalid", "clé"},
		{"non-ASCII is invalid", "café"},
		{"Cyrillic is invalid", "ключ"},
		{"a lone UTF-8 byte is invalid", "a\xffb"},
		{"an unterminated quoted key is invalid", `"abc`},
		{"a lone quote is invalid", `"`},
		{`an unknown escape \x is invalid`, `"a\xb"`},
		{"a bare quote inside a quoted key is invalid", `"a"b"`},
		{"an escaped closing quote is invalid", `"a\"`},
		{"an empty quoted key is invalid", `""`},
		{"256 characters quoted is invalid", `"` + strings.Repeat("q", 256) + `"`},
		{"a control character quoted is invalid", "\"a\x01b\""},
		{"non-ASCII quoted is invalid", `"café"`},
		{"two keys joined by a comma are invalid", "k1, k2"},
		{"one key twice, as the runtime joins two lines, is invalid", "k, k"},
		{"a comma without a space is invalid", "k1,k2"},
		{"a trailing comma is invalid", "k,"},
		{"a leading comma is invalid", ",k"},
		{"a lone comma is invalid", ","},
		{"a UUID twice is invalid", uuidKey + ", " + uuidKey},
		{"two quoted keys are invalid", `"k", "k"`},
		{"two quoted keys without a space are invalid", `"k","k"`},
		{"a quoted key then a bare one is invalid", `"k", k`},
		{"a bare key then a quoted one is invalid", `k, "k"`},
		{"a quoted key with a trailing comma is invalid", `"k",`},
		{"a quoted key with something after it is invalid", `"k";x`},
	}
	for _, tc := range tests {
		for _, method := range []string{http.MethodPost, http.MethodGet} {
			t.Run(tc.name+" in a "+method, func(t *testing.T) {
				mem := kv.NewMemoryNamespace()
				rec := &kvtest.Recording{Namespace: mem}
				var lines []eventlog.Line
				h := httpapi.New(newService(rec), httpapi.Options{Log: logTo(&lines)})
				w := serve(h, request(method, ptr(tc.header), strings.NewReader(validBody)))
				check(t, w, response{400, problemInvalidKey, map[string]string{"Idempotent-Replay": "", "Retry-After": ""}})
				if got := rec.Calls(); len(got) != 0 {
					t.Errorf("storage calls = %v, want none", got)
				}
				if got := mem.Len(); got != 0 {
					t.Errorf("Memory.Len() = %d, want 0", got)
				}
				if len(lines) != 1 || lines[0].Outcome != "invalid_idempotency_key" || lines[0].Status != 400 {
					t.Errorf("log lines = %+v, want one invalid_idempotency_key 400", lines)
				}
			})
		}
	}
}

// TestRepeatedKeyHeader sends Idempotency-Key on two header lines, which
// the runtime's Headers object joins into "k, k" (as httpserve does): a
// list, refused before any storage call, even after k holds an order.
func TestRepeatedKeyHeader(t *testing.T) {
	tests := []struct {
		name   string
		method string
		lines  []string
	}{
		{"the same key twice in a POST is invalid", http.MethodPost, []string{"k", "k"}},
		{"two keys in a POST are invalid", http.MethodPost, []string{"k", "k2"}},
		{"the same quoted key twice in a POST is invalid", http.MethodPost, []string{`"k"`, `"k"`}},
		{"the same key twice in a lookup is invalid", http.MethodGet, []string{"k", "k"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &kvtest.Recording{Namespace: kv.NewMemoryNamespace()}
			var lines []eventlog.Line
			h := httpapi.New(newService(rec), httpapi.Options{Log: logTo(&lines)})
			if first := serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(validBody))); first.Code != http.StatusCreated {
				t.Fatalf("first = %d %s, want 201", first.Code, first.Body)
			}
			before := len(rec.Calls())
			r := request(tc.method, nil, strings.NewReader(validBody))
			r.Header["Idempotency-Key"] = tc.lines
			check(t, serve(h, r), response{400, problemInvalidKey, map[string]string{"Idempotent-Replay": ""}})
			if got := rec.Calls()[before:]; len(got) != 0 {
				t.Errorf("storage calls = %v, want none", got)
			}
			if got := lines[len(lines)-1]; got.Outcome != "invalid_idempotency_key" || got.Status != 400 {
				t.Errorf("log line = %+v, want invalid_idempotency_key 400", got)
			}
		})
	}
}

// TestValidKeys checks keys at the edges of the format are accepted and
// stored as they are.
func TestValidKeys(t *testing.T) {
	var printable strings.Builder
	printable.WriteByte('k') // a leading quote would make it a quoted key
	for c := byte(' '); c <= '~'; c++ {
		if c != ',' { // a list, unless quoted
			printable.WriteByte(c)
		}
	}
	tests := []struct {
		name string
		key  string
	}{
		{"255 characters is created", strings.Repeat("k", 255)},
		{"MaxIdempotencyKeyBytes characters is created", strings.Repeat("k", httpapi.MaxIdempotencyKeyBytes)},
		{"a UUID is created", uuidKey},
		{"printable ASCII after a leading space is created", " !\"#$%&'()*+-./0123456789:;<=>?@AZ[\\]^_`az{|}~"},
		{"one character is created", "k"},
		{"every printable ASCII character but the comma is created", printable.String()},
		{"a space inside is created", "a b"},
		{"a quote at the end only is the key itself", `abc"`},
		{"a backslash unquoted is the key itself", `a\xb`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := kv.NewMemoryNamespace()
			h := newHandler(mem)
			w := serve(h, request(http.MethodPost, ptr(tc.key), strings.NewReader(validBody)))
			if w.Code != http.StatusCreated {
				t.Fatalf("status = %d body = %s, want 201", w.Code, w.Body)
			}
			if e, err := mem.Get(t.Context(), "result:"+tc.key); err != nil || e.Value != w.Body.String() {
				t.Errorf("result:%s = %s, %v; want the receipt %s", tc.key, e.Value, err, w.Body)
			}
			again := serve(h, request(http.MethodPost, ptr(tc.key), strings.NewReader(validBody)))
			check(t, again, response{200, w.Body.String(), map[string]string{"Idempotent-Replay": "true"}})
		})
	}
}

func TestKeyReusedForAnotherOrder(t *testing.T) {
	tests := []struct {
		name string
		body string
		// want is the response; "" body means the first receipt, replayed.
		want response
	}{
		{"another symbol is key reused", `{"symbol":"MSFT","side":"buy","quantity":10}`,
			response{422, problemKeyReused, map[string]string{"Idempotent-Replay": ""}}},
		{"another side is key reused", `{"symbol":"AAPL","side":"sell","quantity":10}`,
			response{422, problemKeyReused, map[string]string{"Idempotent-Replay": ""}}},
		{"another quantity is key reused", `{"symbol":"AAPL","side":"buy","quantity":11}`,
			response{422, problemKeyReused, map[string]string{"Idempotent-Replay": ""}}},
		{"a lower-case symbol is key reused", `{"symbol":"aapl","side":"buy","quantity":10}`,
			response{422, problemKeyReused, map[string]string{"Idempotent-Replay": ""}}},
		{"an invalid order is invalid order", `{"symbol":"AAPL","side":"buy"}`,
			response{422, problemInvalidOrder, map[string]string{"Idempotent-Replay": ""}}},
		{"other spacing and member order replays", "{ \"quantity\" : 10 ,\n\t\"side\":\"buy\", \"symbol\": \"AAPL\" }",
			response{200, "", map[string]string{"Idempotent-Replay": "true"}}},
		{"an extra member replays", `{"symbol":"AAPL","side":"buy","quantity":10,"note":"again"}`,
			response{200, "", map[string]string{"Idempotent-Replay": "true"}}},
		{"the same quantity written 1e1 replays", `{"symbol":"AAPL","side":"buy","quantity":1e1}`,
			response{200, "", map[string]string{"Idempotent-Replay": "true"}}},
		{"an escaped symbol replays", `{"symbol":"\u0041APL","side":"buy","quantity":10}`,
			response{200, "", map[string]string{"Idempotent-Replay": "true"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &kvtest.Recording{Namespace: kv.NewMemoryNamespace()}
			h := newHandler(rec)
			first := serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(validBody)))
			id := orderID(t, first)
			before := len(rec.Writes())

			w := serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(tc.body)))
			want := tc.want
			if want.body == "" {
				want.body = first.Body.String()
			}
			check(t, w, want)
			if w.Code != http.StatusOK && strings.Contains(w.Body.String(), id) {
				t.Errorf("body %s reveals the stored order %s", w.Body, id)
			}
			if got := rec.Writes()[before:]; len(got) != 0 {
				t.Errorf("storage writes %v, want only reads", got)
			}

			again := serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(validBody)))
			check(t, again, response{200, first.Body.String(), map[string]string{"Idempotent-Replay": "true"}})
		})
	}
}

// TestReplaysReferenceReceipt checks a receipt stored by the TypeScript
// Worker, without metadata, is replayed byte for byte whatever the body.
func TestReplaysReferenceReceipt(t *testing.T) {
	const stored = "{ \"orderId\":\"0b7e2c57-8f53-4c39-9f5e-0d2d3c0b2a61\", \"symbol\":\"\\u00e9<&>\" }"
	tests := []struct {
		name string
		body string
	}{
		{"the same order replays", validBody},
		{"another order replays", `{"symbol":"MSFT","side":"sell","quantity":1}`},
		{"an invalid order replays", `{}`},
		{"a body that is not JSON replays", `not json`},
		{"an empty body replays", ``},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := kv.NewMemoryNamespace()
			if err := mem.Put(t.Context(), "result:ts", kv.Entry{Value: stored}, kv.PutOptions{TTL: 24 * time.Hour}); err != nil {
				t.Fatal(err)
			}
			var lines []eventlog.Line
			h := httpapi.New(newService(mem), httpapi.Options{Log: logTo(&lines)})
			w := serve(h, request(http.MethodPost, ptr("ts"), strings.NewReader(tc.body)))
			check(t, w, response{200, stored, map[string]string{"Idempotent-Replay": "true"}})
			want := eventlog.Line{Outcome: "replayed", Key: "ts", Status: 200, OrderID: "0b7e2c57-8f53-4c39-9f5e-0d2d3c0b2a61"}
			if len(lines) != 1 {
				t.Fatalf("log lines = %+v, want one", lines)
			}
			got := lines[0]
			got.Millis = 0
			if got != want {
				t.Errorf("log line = %+v, want %+v", got, want)
			}
		})
	}
}
