package httpapi

import "testing"

// TestEveryAdminQueryReadsPlusAsAPlus: one decoding rule for every admin
// query and path: percent-decoding only, so that a '+' is a plus in the
// listing's query as in /admin/order's, and a space is %20.
func TestEveryAdminQueryReadsPlusAsAPlus(t *testing.T) {
	pairs, err := queryPairs("client=a+b&cursor=c%20d")
	if err != nil || len(pairs) != 2 || pairs[0][1] != "a+b" || pairs[1][1] != "c d" {
		t.Errorf("queryPairs = %q, %v; want a+b and c d", pairs, err)
	}
	h := &Handler{opts: Options{}}
	route, err := h.queryRoute("GET", OrderPath, "client=-&key=a+b")
	if err != nil || route.key.ID != "a+b" {
		t.Errorf("/admin/order's key = %q, %v; want a+b", route.key.ID, err)
	}
}
