package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/auth"
	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/workers"
)

// TestEveryResponseVariesByOriginWithCORSOn: docs/browser.md, "Every
// response carries Vary: Origin" once ALLOWED_ORIGINS is set; the admin
// API's answers too (they carry no other CORS header, rightly).
func TestEveryResponseVariesByOriginWithCORSOn(t *testing.T) {
	store := kv.NewStore(kv.NewMemoryNamespace(), nil)
	svc := intake.New(store, serviceOptions())
	admins, _ := auth.Parse("ops:" + opsToken)
	h := httpapi.New(svc, httpapi.Options{Admins: admins, Admin: intake.NewAdmin(svc, store),
		AllowedOrigins: []string{"https://desk.example.com"}})
	for _, path := range []string{"/orders", "/admin/orders"} {
		header := http.Header{"Origin": {"https://desk.example.com"}, "Authorization": {"Bearer " + opsToken}}
		resp := h.ServeWorker(context.Background(), &workers.Request{Method: "GET", Path: path, Header: header,
			Body: workers.ReaderBody(strings.NewReader(""))})
		vary := ""
		for _, f := range resp.Header {
			if f.Name == "Vary" {
				vary = f.Value
			}
		}
		if vary != "Origin" {
			t.Errorf("GET %s answered %d with Vary %q, want Origin", path, resp.Status, vary)
		}
	}
}
