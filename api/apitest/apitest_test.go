package apitest_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/api"
	"github.com/edge-orders/edge-orders/api/apitest"
)

const receipt = `{"orderId":"0b9c3e8e-6f4a-4d2b-9c1e-3a5f7d9b1c2e","status":"accepted","symbol":"MSFT","side":"buy","quantity":100,"acceptedAt":"2026-01-02T03:04:05.678Z"}`

// receiptHeader is what the Worker sends with a receipt; replay adds
// Idempotent-Replay.
func receiptHeader(replay bool) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if replay {
		h.Set("Idempotent-Replay", "true")
	}
	return h
}

// problemHeader is what the Worker sends with a problem, plus extra
// "Name", "value" pairs.
func problemHeader(extra ...string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/problem+json")
	h.Set("X-Content-Type-Options", "nosniff")
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	return h
}

// expiring adds to h the expiry a lookup over the ledger tells.
func expiring(h http.Header) http.Header {
	h = h.Clone()
	h.Set("Idempotency-Expires", "2026-01-03T03:04:05.678Z")
	return h
}

// rejected is a stored rejection's body.
const rejected = `{"type":"tag:edge-orders,2026:order_rejected","title":"Order rejected","status":422,"detail":"symbol halted","error":"order_rejected","orderId":"0b9c3e8e-6f4a-4d2b-9c1e-3a5f7d9b1c2e"}`

// describedBy is the Link of every problem about the key.
const describedBy = `</idempotency>; rel="describedby"`

// The CORS headers of a Worker with ALLOWED_ORIGINS set.
const deskOrigin = "https://desk.example.com"

// preflightHeader is a 204 preflight's answer to deskOrigin, without
// the headers named in omit.
func preflightHeader(omit ...string) http.Header {
	h := http.Header{}
	h.Set("Access-Control-Allow-Origin", deskOrigin)
	h.Set("Access-Control-Allow-Methods", "GET, POST")
	h.Set("Access-Control-Allow-Headers", "Idempotency-Key, Content-Type, Authorization")
	h.Set("Access-Control-Max-Age", "7200")
	h.Set("Vary", "Origin")
	h.Set("X-Content-Type-Options", "nosniff")
	for _, name := range omit {
		h.Del(name)
	}
	return h
}

// readable adds to h the headers of an actual response to an allowed
// origin.
func readable(h http.Header) http.Header {
	h = h.Clone()
	h.Set("Access-Control-Allow-Origin", deskOrigin)
	h.Set("Access-Control-Expose-Headers", "Idempotent-Replay, Retry-After, Link, Idempotency-Expires")
	h.Set("Vary", "Origin")
	return h
}

// problem is the Worker's problem body for code at status.
func problem(code string, status int) string {
	return fmt.Sprintf(`{"type":"tag:edge-orders,2026:%s","title":"A title","status":%d,"detail":"A detail.","error":"%s"}`, code, status, code)
}

// inProgress is the Worker's 409 body.
const inProgress = `{"type":"tag:edge-orders,2026:in_progress","title":"A request is outstanding for this Idempotency-Key","status":409,"detail":"Retry.","error":"in_progress","retryAfter":60}`

// unsettled is the Worker's 503 body for an order whose outcome is unknown
// (code outcome_unknown) or unresolved, with members after "error".
func unsettled(code, members string) string {
	return fmt.Sprintf(`{"type":"tag:edge-orders,2026:%s","title":"A title","status":503,"detail":"A detail.","error":"%s"%s}`, code, code, members)
}

// The members an unsettled outcome adds.
const (
	unknownMembers    = `,"orderId":"0b9c3e8e-6f4a-4d2b-9c1e-3a5f7d9b1c2e","attempts":3,"nextAttemptAt":"2026-01-02T03:04:09.678Z"`
	unresolvedMembers = `,"orderId":"0b9c3e8e-6f4a-4d2b-9c1e-3a5f7d9b1c2e","attempts":17`
)

func request(method, path string) *http.Request {
	return httptest.NewRequest(method, "http://127.0.0.1:8787"+path, nil)
}

func load(t *testing.T) *apitest.Validator {
	t.Helper()
	v, err := apitest.Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return v
}

func TestDocumentIsOpenAPI31(t *testing.T) {
	load(t)
	if got := string(api.Document()); !strings.HasPrefix(got, "openapi: 3.1.") {
		t.Errorf("document starts %q, want openapi: 3.1.x", got[:min(len(got), 20)])
	}
}

func TestValidateResponseAccepts(t *testing.T) {
	type response struct {
		name   string
		method string
		status int
		header http.Header
		body   string
	}
	tests := []response{
		{"new order's receipt", "POST", 201, receiptHeader(false), receipt},
		{"replay with Idempotent-Replay", "POST", 200, receiptHeader(true), receipt},
		{"lookup's receipt", "GET", 200, receiptHeader(true), receipt},
		{"lookup's receipt with its expiry", "GET", 200, expiring(receiptHeader(true)), receipt},
		{"lookup's rejection with its expiry", "GET", 422, expiring(problemHeader("Idempotent-Replay", "true")), rejected},
		{"receipt with a huge JavaScript quantity", "POST", 201, receiptHeader(false), strings.Replace(receipt, "100", "1e+21", 1)},
		{"missing token", "POST", 401, problemHeader("WWW-Authenticate", `Bearer realm="edge-orders"`), problem("unauthorized", 401)},
		{"invalid token", "GET", 401, problemHeader("WWW-Authenticate", `Bearer realm="edge-orders", error="invalid_token"`), problem("unauthorized", 401)},
		{"missing token on DELETE", "DELETE", 401, problemHeader("WWW-Authenticate", `Bearer realm="edge-orders"`), problem("unauthorized", 401)},
		{"GET without a key", "GET", 400, problemHeader("Link", describedBy), problem("missing_idempotency_key", 400)},
		{"PUT", "PUT", 405, problemHeader("Allow", "GET, HEAD, POST"), problem("method_not_allowed", 405)},
		{"OPTIONS", "OPTIONS", 405, problemHeader("Allow", "GET, HEAD, POST"), problem("method_not_allowed", 405)},
		{"missing key", "POST", 400, problemHeader("Link", describedBy), problem("missing_idempotency_key", 400)},
		{"invalid key", "POST", 400, problemHeader("Link", describedBy), problem("invalid_idempotency_key", 400)},
		{"invalid key on a lookup", "GET", 400, problemHeader("Link", describedBy), problem("invalid_idempotency_key", 400)},
		{"unreadable body", "POST", 400, problemHeader(), problem("unreadable_body", 400)},
		{"body too large", "POST", 413, problemHeader(), problem("body_too_large", 413)},
		{"in progress", "POST", 409, problemHeader("Retry-After", "60", "Link", describedBy), inProgress},
		{"lookup in progress", "GET", 409, problemHeader("Retry-After", "60", "Link", describedBy), inProgress},
		{"lookup of an unknown key", "GET", 404, problemHeader(), problem("not_found", 404)},
		{"key reused", "POST", 422, problemHeader("Link", describedBy), problem("idempotency_key_reused", 422)},
		{"invalid order", "POST", 422, problemHeader(), problem("invalid_order", 422)},
		{"rate limited", "POST", 429, problemHeader("Retry-After", "30"), problem("rate_limited", 429)},
		{"misconfigured, with an empty detail", "PATCH", 500, problemHeader(), strings.Replace(problem("misconfigured", 500), "A detail.", "", 1)},
		{"internal error", "POST", 500, problemHeader(), problem("internal_error", 500)},
		{"storage unavailable", "POST", 503, problemHeader("Retry-After", "1"), problem("storage_unavailable", 503)},
		{"lookup while storage is unavailable", "GET", 503, problemHeader("Retry-After", "1"), problem("storage_unavailable", 503)},
		{"outcome unknown with the next attempt", "POST", 503, problemHeader("Retry-After", "4"), unsettled("outcome_unknown", unknownMembers)},
		{"lookup of an outcome being settled", "GET", 503, problemHeader("Retry-After", "4"), unsettled("outcome_unknown", unknownMembers)},
		{"outcome unknown without the next attempt", "GET", 503, problemHeader("Retry-After", "1"),
			unsettled("outcome_unknown", `,"orderId":"0b9c3e8e-6f4a-4d2b-9c1e-3a5f7d9b1c2e","attempts":0`)},
		{"outcome unresolved", "POST", 503, problemHeader("Retry-After", "1"), unsettled("outcome_unresolved", unresolvedMembers)},
		{"preflight from an allowed origin", "OPTIONS", 204, preflightHeader(), ""},
		{"preflight from another origin", "OPTIONS", 403, problemHeader("Vary", "Origin"), problem("origin_not_allowed", 403)},
		{"receipt to an allowed origin", "POST", 201, readable(receiptHeader(false)), receipt},
		{"replay to an allowed origin", "POST", 200, readable(receiptHeader(true)), receipt},
		{"lookup to an allowed origin", "GET", 200, readable(receiptHeader(true)), receipt},
		{"receipt to another origin", "POST", 201, func() http.Header { h := receiptHeader(false); h.Set("Vary", "Origin"); return h }(), receipt},
		{"problem to an allowed origin", "POST", 409, readable(problemHeader("Retry-After", "60", "Link", describedBy)), inProgress},
		{"unauthorized to an allowed origin", "GET", 401, readable(problemHeader("WWW-Authenticate", `Bearer realm="edge-orders"`)), problem("unauthorized", 401)},
		{"405 to an allowed origin", "OPTIONS", 405, readable(problemHeader("Allow", "GET, HEAD, POST")), problem("method_not_allowed", 405)},
		{"lookup of an unresolved outcome", "GET", 503, problemHeader("Retry-After", "1"), unsettled("outcome_unresolved", unresolvedMembers)},
	}
	v := load(t)
	for _, tc := range tests {
		for _, path := range []string{"/", "/orders/any/path"} {
			t.Run(tc.name+" at "+path, func(t *testing.T) {
				if err := v.ValidateResponse(request(tc.method, path), tc.status, tc.header, []byte(tc.body)); err != nil {
					t.Errorf("ValidateResponse = %v, want nil", err)
				}
			})
		}
	}
}

func TestValidateResponseRejects(t *testing.T) {
	without := func(h http.Header, name string) http.Header {
		h = h.Clone()
		h.Del(name)
		return h
	}
	tests := []struct {
		name   string
		method string
		status int
		header http.Header
		body   string
		want   string // in the error
	}{
		{"receipt missing orderId", "POST", 201, receiptHeader(false),
			strings.Replace(receipt, `"orderId":"0b9c3e8e-6f4a-4d2b-9c1e-3a5f7d9b1c2e",`, "", 1), "orderId"},
		{"receipt with an uppercase orderId", "POST", 201, receiptHeader(false), strings.Replace(receipt, "0b9c3e8e", "0B9C3E8E", 1), "orderId"},
		{"receipt with a version 1 orderId", "POST", 201, receiptHeader(false), strings.Replace(receipt, "-4d2b-", "-1d2b-", 1), "orderId"},
		{"receipt with an extra member", "POST", 201, receiptHeader(false), strings.Replace(receipt, `"status"`, `"fingerprint":"x","status"`, 1), "fingerprint"},
		{"receipt with a status other than accepted", "POST", 201, receiptHeader(false), strings.Replace(receipt, "accepted", "pending", 1), "status"},
		{"receipt with side hold", "POST", 201, receiptHeader(false), strings.Replace(receipt, `"buy"`, `"hold"`, 1), "side"},
		{"receipt with quantity 0", "POST", 201, receiptHeader(false), strings.Replace(receipt, "100", "0", 1), "quantity"},
		{"receipt with acceptedAt without milliseconds", "POST", 201, receiptHeader(false), strings.Replace(receipt, ".678Z", "Z", 1), "acceptedAt"},
		{"receipt served as text/plain", "POST", 201, func() http.Header { h := receiptHeader(false); h.Set("Content-Type", "text/plain"); return h }(), receipt, "text/plain"},
		{"200 replay without Idempotent-Replay", "POST", 200, receiptHeader(false), receipt, "Idempotent-Replay"},
		{"replay with Idempotency-Expires", "POST", 200, expiring(receiptHeader(true)), receipt, "Idempotency-Expires"},
		{"new order with Idempotency-Expires", "POST", 201, expiring(receiptHeader(false)), receipt, "Idempotency-Expires"},
		{"lookup's expiry without milliseconds", "GET", 200, func() http.Header {
			h := receiptHeader(true)
			h.Set("Idempotency-Expires", "2026-01-03T03:04:05Z")
			return h
		}(), receipt, "Idempotency-Expires"},
		{"lookup's expiry as an HTTP date", "GET", 200, func() http.Header {
			h := receiptHeader(true)
			h.Set("Idempotency-Expires", "Sat, 03 Jan 2026 03:04:05 GMT")
			return h
		}(), receipt, "Idempotency-Expires"},
		{"200 lookup without Idempotent-Replay", "GET", 200, receiptHeader(false), receipt, "Idempotent-Replay"},
		{"replay with Idempotent-Replay: false", "POST", 200, func() http.Header { h := receiptHeader(true); h.Set("Idempotent-Replay", "false"); return h }(), receipt, "Idempotent-Replay"},
		{"201 with Idempotent-Replay", "POST", 201, receiptHeader(true), receipt, "Idempotent-Replay"},
		{"receipt without Cache-Control", "POST", 201, without(receiptHeader(false), "Cache-Control"), receipt, "Cache-Control"},
		{"receipt without X-Content-Type-Options", "POST", 201, without(receiptHeader(false), "X-Content-Type-Options"), receipt, "X-Content-Type-Options"},
		{"problem without X-Content-Type-Options", "POST", 422, without(problemHeader(), "X-Content-Type-Options"), problem("invalid_order", 422), "X-Content-Type-Options"},
		{"problem with an unknown error code", "POST", 422, problemHeader(), problem("order_rejected", 422), "error"},
		{"problem whose type is not its code's", "POST", 422, problemHeader(),
			strings.Replace(problem("invalid_order", 422), "2026:invalid_order", "2026:idempotency_key_reused", 1), "type"},
		{"problem whose status is not its code's", "POST", 400, problemHeader(), problem("invalid_order", 400), "status"},
		{"problem whose body status is not the response's", "POST", 422, problemHeader(), problem("unreadable_body", 400), "status"},
		{"problem without a title", "POST", 422, problemHeader(), strings.Replace(problem("invalid_order", 422), `"title":"A title",`, "", 1), "title"},
		{"problem leaking an extra member", "POST", 500, problemHeader(), strings.Replace(problem("internal_error", 500), `"detail"`, `"stack":"at kv.Get","detail"`, 1), "stack"},
		{"problem as application/json", "POST", 422, func() http.Header { h := problemHeader(); h.Set("Content-Type", "application/json"); return h }(), problem("invalid_order", 422), "application/json"},
		{"in progress without retryAfter in the body", "POST", 409, problemHeader("Retry-After", "60", "Link", describedBy), problem("in_progress", 409), "retryAfter"},
		{"in progress without Retry-After", "POST", 409, problemHeader("Link", describedBy), inProgress, "Retry-After"},
		{"in progress with a Retry-After date", "POST", 409, problemHeader("Retry-After", "Fri, 02 Jan 2026 03:04:05 GMT", "Link", describedBy), inProgress, "Retry-After"},
		{"in progress without Link", "POST", 409, problemHeader("Retry-After", "60"), inProgress, "Link"},
		{"a lookup's invalid key without Link", "GET", 400, problemHeader(), problem("invalid_idempotency_key", 400), "Link"},
		{"a missing key linking another page", "POST", 400, problemHeader("Link", `</docs>; rel="describedby"`), problem("missing_idempotency_key", 400), "Link"},
		{"storage unavailable without Retry-After", "POST", 503, problemHeader(), problem("storage_unavailable", 503), "Retry-After"},
		{"outcome unknown without Retry-After", "GET", 503, problemHeader(), unsettled("outcome_unknown", unknownMembers), "Retry-After"},
		{"outcome unknown without orderId", "POST", 503, problemHeader("Retry-After", "1"), unsettled("outcome_unknown", `,"attempts":1`), "orderId"},
		{"outcome unknown without attempts", "GET", 503, problemHeader("Retry-After", "1"),
			unsettled("outcome_unknown", `,"orderId":"0b9c3e8e-6f4a-4d2b-9c1e-3a5f7d9b1c2e"`), "attempts"},
		{"outcome unknown with negative attempts", "GET", 503, problemHeader("Retry-After", "1"),
			unsettled("outcome_unknown", strings.Replace(unknownMembers, `"attempts":3`, `"attempts":-1`, 1)), "attempts"},
		{"outcome unknown with a next attempt without milliseconds", "GET", 503, problemHeader("Retry-After", "1"),
			unsettled("outcome_unknown", strings.Replace(unknownMembers, ".678Z", "Z", 1)), "nextAttemptAt"},
		{"outcome unknown leaking its cause", "POST", 503, problemHeader("Retry-After", "1"),
			unsettled("outcome_unknown", unknownMembers+`,"cause":"oms: 502 from 10.0.0.7"`), "cause"},
		{"outcome unresolved with a next attempt", "GET", 503, problemHeader("Retry-After", "1"), unsettled("outcome_unresolved", unknownMembers), "nextAttemptAt"},
		{"outcome unresolved without orderId", "GET", 503, problemHeader("Retry-After", "1"), unsettled("outcome_unresolved", `,"attempts":17`), "orderId"},
		{"outcome unresolved as a 500", "POST", 500, problemHeader(), strings.Replace(unsettled("outcome_unresolved", unresolvedMembers), "503", "500", 1), "status"},
		{"rate limited without Retry-After", "POST", 429, problemHeader(), problem("rate_limited", 429), "Retry-After"},
		{"unauthorized without a challenge", "POST", 401, problemHeader(), problem("unauthorized", 401), "WWW-Authenticate"},
		{"unauthorized with a Basic challenge", "POST", 401, problemHeader("WWW-Authenticate", `Basic realm="edge-orders"`), problem("unauthorized", 401), "WWW-Authenticate"},
		{"405 with the old Allow: POST", "PUT", 405, problemHeader("Allow", "POST"), problem("method_not_allowed", 405), "Allow"},
		{"405 without Allow", "GET", 405, problemHeader(), problem("method_not_allowed", 405), "Allow"},
		{"a receipt for a PUT", "PUT", 201, receiptHeader(false), receipt, "status"},
		{"a 201 for a lookup", "GET", 201, receiptHeader(false), receipt, "status"},
		{"a 404 for a POST", "POST", 404, problemHeader(), problem("not_found", 404), "status"},
		{"a 405 for a POST", "POST", 405, problemHeader("Allow", "GET, HEAD, POST"), problem("method_not_allowed", 405), "status"},
		{"preflight without Access-Control-Allow-Origin", "OPTIONS", 204, preflightHeader("Access-Control-Allow-Origin"), "", "Access-Control-Allow-Origin"},
		{"preflight without Access-Control-Allow-Headers", "OPTIONS", 204, preflightHeader("Access-Control-Allow-Headers"), "", "Access-Control-Allow-Headers"},
		{"preflight without Access-Control-Max-Age", "OPTIONS", 204, preflightHeader("Access-Control-Max-Age"), "", "Access-Control-Max-Age"},
		{"preflight without Vary", "OPTIONS", 204, preflightHeader("Vary"), "", "Vary"},
		{"preflight allowing PUT", "OPTIONS", 204, func() http.Header {
			h := preflightHeader()
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT")
			return h
		}(), "", "Access-Control-Allow-Methods"},
		{"preflight allowing every origin", "OPTIONS", 204, func() http.Header { h := preflightHeader(); h.Set("Access-Control-Allow-Origin", "*"); return h }(), "", "Access-Control-Allow-Origin"},
		{"a 204 for a POST", "POST", 204, preflightHeader(), "", "status"},
		{"a 403 for a POST", "POST", 403, problemHeader(), problem("origin_not_allowed", 403), "status"},
		{"origin not allowed as a 400", "OPTIONS", 400, problemHeader(), problem("origin_not_allowed", 400), "status"},
		{"receipt allowing every origin", "POST", 201, func() http.Header {
			h := readable(receiptHeader(false))
			h.Set("Access-Control-Allow-Origin", "*")
			return h
		}(), receipt, "Access-Control-Allow-Origin"},
		{"receipt hiding Idempotent-Replay", "POST", 200, func() http.Header {
			h := readable(receiptHeader(true))
			h.Set("Access-Control-Expose-Headers", "Retry-After")
			return h
		}(), receipt, "Access-Control-Expose-Headers"},
		{"receipt varying on another header", "POST", 201, func() http.Header { h := readable(receiptHeader(false)); h.Set("Vary", "Accept"); return h }(), receipt, "Vary"},
		{"a 502 from a proxy", "POST", 502, http.Header{"Content-Type": {"text/html"}}, "<h1>Bad gateway</h1>", "status"},
	}
	v := load(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := v.ValidateResponse(request(tc.method, "/"), tc.status, tc.header, []byte(tc.body))
			if err == nil {
				t.Fatalf("ValidateResponse = nil, want an error about %s", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ValidateResponse = %v, want an error about %s", err, tc.want)
			}
		})
	}
}

// policyHeader is what the Worker sends with its policy page.
func policyHeader() http.Header {
	h := http.Header{}
	h.Set("Content-Type", "text/markdown; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	return h
}

const policyPage = "# Idempotency policy\n\nThis Worker places each order at most once.\n"

// TestValidatePolicyPath checks that a GET of /idempotency is checked
// against the policy's operation, and every other request to it against
// the root's, as the Worker answers them.
func TestValidatePolicyPath(t *testing.T) {
	v := load(t)
	accepts := []struct {
		name   string
		method string
		status int
		header http.Header
		body   string
	}{
		{"the policy", "GET", 200, policyHeader(), policyPage},
		{"the policy to an allowed origin", "GET", 200, readable(policyHeader()), policyPage},
		{"a misconfigured Worker's policy", "GET", 500, problemHeader(), problem("misconfigured", 500)},
		{"an order POSTed there, as anywhere", "POST", 201, receiptHeader(false), receipt},
		{"a PUT there, as anywhere", "PUT", 405, problemHeader("Allow", "GET, HEAD, POST"), problem("method_not_allowed", 405)},
	}
	for _, tc := range accepts {
		t.Run("accepts "+tc.name, func(t *testing.T) {
			if err := v.ValidateResponse(request(tc.method, "/idempotency"), tc.status, tc.header, []byte(tc.body)); err != nil {
				t.Errorf("ValidateResponse = %v, want nil", err)
			}
		})
	}
	without := func(name string) http.Header { h := policyHeader(); h.Del(name); return h }
	rejects := []struct {
		name   string
		status int
		header http.Header
		body   string
		want   string
	}{
		{"a receipt for the policy", 200, func() http.Header { h := policyHeader(); h.Set("Content-Type", "application/json"); return h }(), receipt, "application/json"},
		{"the policy as text/html", 200, func() http.Header { h := policyHeader(); h.Set("Content-Type", "text/html"); return h }(), policyPage, "text/html"},
		{"the policy without its heading", 200, policyHeader(), "Keys are kept.\n", "pattern"},
		{"the policy without Cache-Control", 200, without("Cache-Control"), policyPage, "Cache-Control"},
		{"the policy without X-Content-Type-Options", 200, without("X-Content-Type-Options"), policyPage, "X-Content-Type-Options"},
		{"a 401 for the policy, which needs no token", 401, problemHeader("WWW-Authenticate", `Bearer realm="edge-orders"`), problem("unauthorized", 401), "status"},
		{"a 404 for the policy", 404, problemHeader(), problem("not_found", 404), "status"},
	}
	for _, tc := range rejects {
		t.Run("rejects "+tc.name, func(t *testing.T) {
			err := v.ValidateResponse(request("GET", "/idempotency"), tc.status, tc.header, []byte(tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ValidateResponse = %v, want an error about %s", err, tc.want)
			}
		})
	}
	t.Run("the policy anywhere else is not a lookup's answer", func(t *testing.T) {
		if err := v.ValidateResponse(request("GET", "/orders"), 200, policyHeader(), []byte(policyPage)); err == nil {
			t.Error("ValidateResponse = nil for the policy at /orders, want an error")
		}
	})
}

func TestValidateResponseUnknownMethod(t *testing.T) {
	v := load(t)
	for _, method := range []string{"CONNECT", "TRACE"} {
		t.Run(method, func(t *testing.T) {
			err := v.ValidateResponse(request(method, "/"), 405, problemHeader("Allow", "GET, HEAD, POST"), []byte(problem("method_not_allowed", 405)))
			if !errors.Is(err, apitest.ErrNoOperation) {
				t.Errorf("ValidateResponse = %v, want ErrNoOperation", err)
			}
		})
	}
}

func TestValidateRequest(t *testing.T) {
	const order = `{"symbol":"MSFT","side":"buy","quantity":100}`
	tests := []struct {
		name          string
		method        string
		key           string // "" sends none
		authorization string
		body          string
		wantErr       bool
	}{
		{"order with a UUID key", "POST", "8e0f6b8a-5a3c-4b8e-9f0e-2f1d3c4b5a69", "", order, false},
		{"order with a bearer token", "POST", "k", "Bearer tok", order, false},
		{"order with a quoted key", "POST", `"abc"`, "", order, false},
		{"order with a quoted key with escapes", "POST", `"a\"b\\c"`, "", order, false},
		{"order with a 255-character key", "POST", strings.Repeat("k", 255), "", order, false},
		{"order with a 255-character quoted key", "POST", `"` + strings.Repeat("k", 255) + `"`, "", order, false},
		{"order with other members", "POST", "k", "", `{"symbol":"MSFT","side":"sell","quantity":1,"note":"x"}`, false},
		{"order with quantity 1.0", "POST", "k", "", `{"symbol":"MSFT","side":"sell","quantity":1.0}`, false},
		{"lookup", "GET", "k", "", "", false},
		{"order without a key", "POST", "", "", order, true},
		{"lookup without a key", "GET", "", "", "", true},
		{"order with a 256-character key", "POST", strings.Repeat("k", 256), "", order, true},
		{"order with a non-ASCII key", "POST", "clé", "", order, true},
		{"order with an unclosed quoted key", "POST", `"abc`, "", order, true},
		{"order with a bad escape in a quoted key", "POST", `"a\b"`, "", order, true},
		{"order with an empty quoted key", "POST", `""`, "", order, true},
		{"order without a symbol", "POST", "k", "", `{"side":"buy","quantity":100}`, true},
		{"order with an empty symbol", "POST", "k", "", `{"symbol":"","side":"buy","quantity":100}`, true},
		{"order to hold", "POST", "k", "", `{"symbol":"MSFT","side":"hold","quantity":100}`, true},
		{"order for 0", "POST", "k", "", `{"symbol":"MSFT","side":"buy","quantity":0}`, true},
		{"order for 1.5", "POST", "k", "", `{"symbol":"MSFT","side":"buy","quantity":1.5}`, true},
		{"order that is not JSON", "POST", "k", "", `symbol=MSFT`, true},
		{"DELETE", "DELETE", "k", "", "", false},
		{"HEAD, a lookup without its body", "HEAD", "k", "", "", false},
		{"HEAD without a key", "HEAD", "", "", "", true},
	}
	v := load(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, "http://127.0.0.1:8787/any", strings.NewReader(tc.body))
			if tc.body != "" {
				r.Header.Set("Content-Type", "application/json")
			}
			if tc.key != "" {
				r.Header.Set("Idempotency-Key", tc.key)
			}
			if tc.authorization != "" {
				r.Header.Set("Authorization", tc.authorization)
			}
			err := v.ValidateRequest(r)
			if gotErr := err != nil; gotErr != tc.wantErr {
				t.Errorf("ValidateRequest = %v, want error %v", err, tc.wantErr)
			}
			if body, _ := io.ReadAll(r.Body); string(body) != tc.body {
				t.Errorf("body after ValidateRequest = %q, want %q unread", body, tc.body)
			}
		})
	}
}

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
}
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...) }
func (r *recorder) Fatal(args ...any)                 { r.Errorf("%s", fmt.Sprint(args...)) }

func TestCheckHTTPResponse(t *testing.T) {
	tests := []struct {
		name       string
		replay     bool
		wantFailed bool
	}{
		{"replay with its header passes", true, false},
		{"200 without Idempotent-Replay fails", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for name, values := range receiptHeader(tc.replay) {
					w.Header()[name] = values
				}
				io.WriteString(w, receipt)
			}))
			defer srv.Close()
			req, _ := http.NewRequest("GET", srv.URL+"/lookup", nil)
			req.Header.Set("Idempotency-Key", "k")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()

			rec := &recorder{TB: t}
			body := apitest.CheckHTTPResponse(rec, resp)
			if rec.failed != tc.wantFailed {
				t.Errorf("CheckHTTPResponse failed = %v (%s), want %v", rec.failed, rec.msg, tc.wantFailed)
			}
			if string(body) != receipt {
				t.Errorf("returned body = %s, want %s", body, receipt)
			}
			if again, _ := io.ReadAll(resp.Body); string(again) != receipt {
				t.Errorf("resp.Body after the check = %s, want it unread", again)
			}
		})
	}
}

func TestCheckRequest(t *testing.T) {
	r := httptest.NewRequest("POST", "http://127.0.0.1:8787/", strings.NewReader(`{"symbol":"MSFT","side":"buy","quantity":100}`))
	r.Header.Set("Content-Type", "application/json")
	rec := &recorder{TB: t}
	apitest.CheckRequest(rec, r)
	if !rec.failed || !strings.Contains(rec.msg, "Idempotency-Key") {
		t.Errorf("CheckRequest of an order without a key: failed %v (%s), want a failure naming Idempotency-Key", rec.failed, rec.msg)
	}
	r.Header.Set("Idempotency-Key", "k")
	r.Body = io.NopCloser(strings.NewReader(`{"symbol":"MSFT","side":"buy","quantity":100}`))
	rec = &recorder{TB: t}
	apitest.CheckRequest(rec, r)
	if rec.failed {
		t.Errorf("CheckRequest of a good order failed: %s", rec.msg)
	}
}
