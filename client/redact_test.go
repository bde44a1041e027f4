package client_test

import (
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/client"
)

// A transport failure's error must not show the URL's query or password,
// which New's own error already keeps out (TestNewRefusesAURLNoRetryCouldReach).
func TestTransportErrorDoesNotShowTheURLsSecrets(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens: connection refused
	c, err := client.New("http://desk:s3cr3t-pass@"+addr+"/orders?token=s3cr3t-q", &client.Options{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.SubmitWithKey(t.Context(), "k-redact", client.Order{Symbol: "MSFT", Side: client.Buy, Quantity: 1})
	if err == nil {
		t.Fatal("want an error")
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("error shows a secret of the URL: %v", err)
	}
	var ue *url.Error
	if !errors.As(err, &ue) || !client.IsRetryable(err) {
		t.Errorf("error %v: want a retryable *url.Error still", err)
	}
}
