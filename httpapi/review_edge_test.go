package httpapi_test

import (
	"testing"
)

// TestAnEmptyOrderIDIsNoPreconditionToSkip: a resolve or a purge given
// orderId= with nothing after it (a script's unset variable) names an
// order id no key holds; it must not act as if it had named none.
func TestAnEmptyOrderIDIsNoPreconditionToSkip(t *testing.T) {
	for _, path := range []string{
		"/admin/orders/desk-a/k1/resolve?orderId=",
		"/admin/order/resolve?client=desk-a&key=k1&orderId=",
	} {
		e := newAdminEnv(t, false)
		e.unknownKey(t, "k1")
		w := e.do("POST", path, opsToken, `{"status":"accepted"}`)
		if w.Code != 400 || problemCode(t, w) != "invalid_query" {
			t.Errorf("POST %s = %d %s, want 400 invalid_query", path, w.Code, w.Body)
		}
		if got := decodeEntry(t, e.do("GET", "/admin/orders/desk-a/k1", opsToken, "")); got.State != "unknown" {
			t.Errorf("after POST %s the key is %s, want still unknown", path, got.State)
		}
	}
}
