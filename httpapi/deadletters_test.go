package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/auth"
	"github.com/edge-orders/edge-orders/eventlog"
	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
	"github.com/edge-orders/edge-orders/workers"
)

// FuzzDeadLetterRequests: whatever an admin sends to the dead letters'
// paths, the answer is JSON and never a 5xx, a refusal writes nothing,
// and an acknowledgement writes one KV key: the letter its answer names.
func FuzzDeadLetterRequests(f *testing.F) {
	f.Add("DELETE", "/admin/deadletters/-/k1", "letterId=m1")
	f.Add("DELETE", "/admin/deadletters/desk-gone/k1", "")
	f.Add("GET", "/admin/deadletter", "client=.&key=..")
	f.Add("DELETE", "/admin/deadletter", "client=-&key=k1&letterId=m2")
	f.Add("DELETE", "/admin/deadletter", "client=-&key=k1&key=k2")
	f.Add("GET", "/admin/deadletters/-/k%2", "letterId=%zz")
	f.Fuzz(func(t *testing.T, method, path, query string) {
		mem := kv.NewMemoryNamespace()
		rec := &kvtest.Recording{Namespace: mem}
		letters := kv.NewDeadLetterStore(listingRecording{rec, mem})
		for _, d := range []intake.DeadLetter{{Key: intake.Key{ID: "k1"}, ID: "m1"}, {Key: intake.Key{ID: "k1"}, ID: "m2"}, {Key: intake.Key{Client: "desk-gone", ID: "k1"}, ID: "m3"},
			{Key: intake.Key{Client: ".", ID: ".."}, ID: "m4"}} {
			d.Received = time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
			if err := letters.Record(context.Background(), d); err != nil {
				t.Fatal(err)
			}
		}
		writes := len(rec.Writes())
		admins, err := auth.Parse("ops:" + opsToken)
		if err != nil {
			t.Fatal(err)
		}
		clients, err := auth.Parse("desk-a:" + deskToken)
		if err != nil {
			t.Fatal(err)
		}
		svc := intake.New(kv.NewStore(kv.NewMemoryNamespace(), nil), serviceOptions())
		h := httpapi.New(svc, httpapi.Options{Admins: admins, Clients: clients, Log: func(eventlog.Line) {}, DeadLetters: letters})
		header := http.Header{}
		header.Set("Authorization", "Bearer "+opsToken)
		resp := h.ServeWorker(context.Background(), &workers.Request{Method: method, Path: "/admin/" + strings.TrimPrefix(path, "/admin/"),
			Query: query, Header: header, Body: workers.ReaderBody(strings.NewReader(""))})
		wrote := rec.Writes()[writes:]
		switch {
		case resp.Status >= 500:
			t.Fatalf("%s %s?%s = %d %s", method, path, query, resp.Status, resp.Body)
		case !json.Valid(resp.Body):
			t.Fatalf("%s %s?%s = %d with a body that is not JSON: %s", method, path, query, resp.Status, resp.Body)
		case resp.Status >= 400 && len(wrote) != 0:
			t.Fatalf("%s %s?%s = %d, and wrote %v", method, path, query, resp.Status, wrote)
		case len(wrote) > 0:
			var got struct{ Client, Key, LetterID string }
			if err := json.Unmarshal(resp.Body, &got); err != nil || len(wrote) != 1 {
				t.Fatalf("%s %s?%s = %d %s, and wrote %v: want one write, the letter answered", method, path, query, resp.Status, resp.Body, wrote)
			}
			client := got.Client
			if client == "-" {
				client = ""
			}
			want := intake.Key{Client: client, ID: got.Key}.String() + "\x7f" + got.LetterID
			if name := wrote[0].Key; name != "deadletter:"+want {
				t.Fatalf("%s %s?%s acknowledged %s, and wrote %q: want that letter's name", method, path, query, resp.Body, name)
			}
		}
	})
}
