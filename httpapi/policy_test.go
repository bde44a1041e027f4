package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/api/apitest"
	"github.com/edge-orders/edge-orders/auth"
	"github.com/edge-orders/edge-orders/eventlog"
	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/workers"
)

// getPolicy asks h for the policy page, with header as name, value pairs.
func getPolicy(t *testing.T, h workers.Handler, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "http://worker.example"+httpapi.PolicyPath, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := serve(h, r)
	apitest.CheckResponse(t, r, w.Code, w.Header(), w.Body.Bytes())
	if w.Code != http.StatusOK {
		t.Fatalf("GET %s = %d %s, want 200", httpapi.PolicyPath, w.Code, w.Body)
	}
	for name, want := range map[string]string{"Content-Type": "text/markdown; charset=utf-8", "Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"} {
		if got := w.Header().Values(name); len(got) != 1 || got[0] != want {
			t.Errorf("%s = %q, want just %q", name, got, want)
		}
	}
	return w
}

// TestPolicyFollowsTheConfiguration checks that the published policy states
// the figures the Worker runs with: two configurations, two pages, each
// with its own figures and none of the other's.
func TestPolicyFollowsTheConfiguration(t *testing.T) {
	clients, err := auth.Parse("desk-a:" + strings.Repeat("t", 16))
	if err != nil {
		t.Fatal(err)
	}
	configs := []struct {
		name    string
		opts    intake.Options
		clients *auth.Clients
		// want are what the page must say, wantNot what it must not.
		want, wantNot []string
	}{
		{
			name: "the defaults, with an order-management system and a settle queue",
			opts: intake.Options{ResultTTL: 24 * time.Hour, PendingTTL: time.Minute, Wait: 2 * time.Second,
				Gateway: &scriptedGateway{}, SettleMaxAge: 24 * time.Hour, Schedule: noSchedule},
			want: []string{
				"1 to " + strconv.Itoa(httpapi.MaxIdempotencyKeyBytes) + " printable ASCII characters",
				"a Structured Field string",
				"Every problem about the key links here: `Link: </idempotency>; rel=\"describedby\"`.",
				"kept 86400 seconds (24 hours, `RESULT_TTL_SECONDS`) after it is stored",
				"`acceptedAt` plus 86400 seconds (24 hours, `SETTLE_MAX_AGE_SECONDS`) plus 86400 seconds (24 hours, `RESULT_TTL_SECONDS`), 48 hours in all",
				"waits up to 2000 ms (`IN_PROGRESS_WAIT_MS`)",
				"`409 in_progress` with `Retry-After: 60` (`PENDING_TTL_SECONDS`",
				"`422 idempotency_key_reused`",
				"`503 outcome_unknown`", "again by itself, with the same `orderId`",
				"If it has not answered for good 86400 seconds (24 hours, `SETTLE_MAX_AGE_SECONDS`) after the order's acceptance",
				"`503 outcome_unresolved`",
				"runs without API tokens",
			},
			wantNot: []string{"3600", "120", "no order-management system", "at once", "Keys belong to the client"},
		},
		{
			name:    "shorter, stand-in, tokens",
			opts:    intake.Options{ResultTTL: time.Hour, PendingTTL: 2 * time.Minute},
			clients: clients,
			want: []string{
				"1 to " + strconv.Itoa(httpapi.MaxIdempotencyKeyBytes) + " printable ASCII characters",
				"kept 3600 seconds (1 hour, `RESULT_TTL_SECONDS`) after it is stored",
				"`409 in_progress` at once (`IN_PROGRESS_WAIT_MS` is 0), with `Retry-After: 120` (`PENDING_TTL_SECONDS`",
				"`422 idempotency_key_reused`",
				"no order-management system configured",
				"If the receipt cannot be stored after that, the key gets `503 outcome_unknown` until a retry under the key stores it",
				"Keys belong to the client",
			},
			wantNot: []string{"86400", "60`", "SETTLE_MAX_AGE_SECONDS", "outcome_unresolved", "waits up to", "runs without API tokens",
				"no outcome is ever unknown", "by itself"},
		},
		{
			name: "an order-management system, no settle queue",
			opts: intake.Options{ResultTTL: time.Hour, PendingTTL: time.Minute, Gateway: &scriptedGateway{}, SettleMaxAge: time.Hour},
			want: []string{
				"`503 outcome_unknown`", "does not ask again by itself: retry under the key",
			},
			wantNot: []string{"nextAttemptAt", "asks the order-management system again by itself", "outcome_unresolved"},
		},
	}
	pages := map[string]bool{}
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			h := httpapi.New(intake.New(kv.NewStore(kv.NewMemoryNamespace(), nil), c.opts), httpapi.Options{Clients: c.clients})
			page := getPolicy(t, h).Body.String()
			wantPageSays(t, page, c.want, c.wantNot)
			pages[page] = true
		})
	}
	if len(pages) != len(configs) {
		t.Errorf("%d configurations published %d pages, want one each", len(configs), len(pages))
	}
}

// TestPolicyIsPublicAndNoKeyRoute checks that the policy needs no token,
// reads no key and touches no storage, that only its path serves it, and
// that a page on an allowed origin may read it.
func TestPolicyIsPublicAndNoKeyRoute(t *testing.T) {
	clients, err := auth.Parse("desk-a:" + strings.Repeat("t", 16))
	if err != nil {
		t.Fatal(err)
	}
	rec := &kvtest.Recording{Namespace: kv.NewMemoryNamespace()}
	var lines []eventlog.Line
	h := httpapi.New(newService(rec), httpapi.Options{Clients: clients, Log: logTo(&lines), AllowedOrigins: []string{deskOrigin}})

	t.Run("without a token", func(t *testing.T) { getPolicy(t, h) })
	t.Run("with a key, which it ignores", func(t *testing.T) { getPolicy(t, h, "Idempotency-Key", "k") })
	t.Run("with an invalid key and a bad token", func(t *testing.T) {
		getPolicy(t, h, "Idempotency-Key", "a,b", "Authorization", "Bearer nobody")
	})
	t.Run("from an allowed origin, readable", func(t *testing.T) {
		w := getPolicy(t, h, "Origin", deskOrigin)
		if got := w.Header().Get("Access-Control-Allow-Origin"); got != deskOrigin {
			t.Errorf("Access-Control-Allow-Origin = %q, want %q", got, deskOrigin)
		}
	})
	if got := rec.Calls(); len(got) != 0 {
		t.Errorf("storage calls = %v, want none", got)
	}
	for _, l := range lines {
		if l.Outcome != "policy" || l.Status != http.StatusOK || l.Client != "" || l.Key != "" {
			t.Errorf("log line %+v, want outcome policy, status 200, no client or key", l)
		}
	}

	for _, tc := range []struct{ name, method, path string }{
		{"another path", http.MethodGet, "/idempotency/x"},
		{"a POST to it", http.MethodPost, httpapi.PolicyPath},
		{"a HEAD of it", http.MethodHead, httpapi.PolicyPath},
	} {
		t.Run(tc.name+" is not the policy", func(t *testing.T) {
			w := serve(h, httptest.NewRequest(tc.method, "http://worker.example"+tc.path, nil))
			if w.Code != http.StatusUnauthorized {
				t.Errorf("%s %s without a token = %d, want 401 as any other request", tc.method, tc.path, w.Code)
			}
		})
	}
}

// TestPolicyTellsWhereLookupsTellExpiry checks that the page promises
// Idempotency-Expires only where the store tells a lookup the expiry.
func TestPolicyTellsWhereLookupsTellExpiry(t *testing.T) {
	for name, store := range map[string]intake.Store{"the ledger": ledger.NewMemoryStore(), "KV": kv.NewStore(kv.NewMemoryNamespace(), nil)} {
		t.Run(name, func(t *testing.T) {
			page := getPolicy(t, httpapi.New(intake.New(store, serviceOptions()), httpapi.Options{})).Body.String()
			if got, want := strings.Contains(page, "in the `Idempotency-Expires` response header"), name == "the ledger"; got != want {
				t.Errorf("the page promises Idempotency-Expires: %v, want %v:\n%s", got, want, page)
			}
		})
	}
}

// noSchedule stands for a settle queue that takes every message.
func noSchedule(context.Context, intake.Key, time.Time) error { return nil }

// TestUnknownOutcomePromisesOnlyWhatRuns: an unknown outcome's answer
// names a next attempt only where a settler will make it.
func TestUnknownOutcomePromisesOnlyWhatRuns(t *testing.T) {
	for _, queue := range []bool{true, false} {
		name := "with a settle queue, the next attempt is named"
		if !queue {
			name = "without one, no attempt is promised"
		}
		t.Run(name, func(t *testing.T) {
			gw := &lossyGateway{}
			gw.lose.Store(true)
			opts := serviceOptions()
			opts.Gateway = gw
			if queue {
				opts.Schedule = noSchedule
			}
			h := httpapi.New(intake.New(kv.NewStore(kv.NewMemoryNamespace(), nil), opts), httpapi.Options{})
			w := serve(h, request("POST", ptr("k1"), strings.NewReader(validBody)))
			var body struct {
				Error, Detail string
				NextAttemptAt *string
			}
			if w.Code != 503 || json.Unmarshal(w.Body.Bytes(), &body) != nil || body.Error != "outcome_unknown" {
				t.Fatalf("POST = %d %s, want 503 outcome_unknown", w.Code, w.Body)
			}
			if got := body.NextAttemptAt != nil; got != queue {
				t.Errorf("nextAttemptAt given: %v, want %v: %s", got, queue, w.Body)
			}
			want := "is settling it"
			if !queue {
				want = "does not ask again by itself"
			}
			if !strings.Contains(body.Detail, want) {
				t.Errorf("detail %q, want it to say %q", body.Detail, want)
			}
			if w.Header().Get("Retry-After") == "" {
				t.Errorf("no Retry-After")
			}
		})
	}
}

// TestEachModesPolicyIsTrueOfThatMode: KV mode's page states KV's limits
// in the terms of docs/operating.md, and qualifies the byte-for-byte
// replay and the 422 on reuse it cannot always keep; ledger mode's page
// makes its promises whole; during a migration the ledger's page states
// KV's limits for the keys still held in KV, until the fallback's end.
func TestEachModesPolicyIsTrueOfThatMode(t *testing.T) {
	until := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	kvLimits := []string{"## KV's limits", "may miss a write for 60 seconds or more",
		"another `acceptedAt` than the 201 gave", "a second, different order under the key may be placed, instead of `422 idempotency_key_reused`",
		"byte for byte (but see [KV's limits](#kvs-limits))"}
	migrating := serviceOptions()
	migrating.Fallback, migrating.FallbackUntil = kv.NewStore(kv.NewMemoryNamespace(), nil), until
	for _, tc := range []struct {
		name          string
		store         intake.Store
		opts          intake.Options
		want, wantNot []string
	}{
		{"KV mode", kv.NewStore(kv.NewMemoryNamespace(), nil), serviceOptions(), append(kvLimits, "in any location"), []string{"Durable Object"}},
		{"ledger mode", ledger.NewMemoryStore(), serviceOptions(), nil, kvLimits},
		{"ledger mode during a migration", ledger.NewMemoryStore(), migrating,
			append(kvLimits, "until 2026-12-01T00:00:00Z it also reads the keys an earlier version kept in Workers KV"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page := getPolicy(t, httpapi.New(intake.New(tc.store, tc.opts), httpapi.Options{})).Body.String()
			wantPageSays(t, page, tc.want, tc.wantNot)
		})
	}
}

// wantPageSays fails t unless page says each of want and none of wantNot.
func wantPageSays(t *testing.T, page string, want, wantNot []string) {
	t.Helper()
	for _, s := range want {
		if !strings.Contains(page, s) {
			t.Errorf("the page does not say %q:\n%s", s, page)
		}
	}
	for _, s := range wantNot {
		if strings.Contains(page, s) {
			t.Errorf("the page says %q, which is not this configuration's:\n%s", s, page)
		}
	}
}
