package client_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/client"
)

// unknownOutcome is the Worker's 503 for an order whose OMS answer was
// lost: order o-1 may be placed.
func unknownOutcome(r *http.Request) *http.Response {
	body := `{"type":"x","title":"t","status":503,"detail":"d","error":"outcome_unknown","orderId":"o-1","attempts":1}`
	return &http.Response{StatusCode: 503, Header: http.Header{"Content-Type": {"application/problem+json"}, "Retry-After": {"1"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: r}
}

// secondAttempt answers the first attempt with unknownOutcome and the
// second with then.
type secondAttempt struct {
	n    int
	then func(*http.Request) (*http.Response, error)
}

func (s *secondAttempt) RoundTrip(r *http.Request) (*http.Response, error) {
	if s.n++; s.n == 1 {
		return unknownOutcome(r), nil
	}
	return s.then(r)
}

// TestARetryThatSaysNothingOfTheOrderReportsWhatTheFirstSaid: the first
// attempt's outcome is unknown (order o-1 may be placed); the retry meets
// a certificate the client does not trust (a rotated one, another edge),
// so it never left, or the caller cancels it in flight. Neither says
// anything of the order: the call reports what the first attempt said,
// retryable, with its order id, never a final error that would have the
// caller send the order again under a new key (found by a review).
func TestARetryThatSaysNothingOfTheOrderReportsWhatTheFirstSaid(t *testing.T) {
	for _, tc := range []struct {
		name string
		then func(*http.Request) (*http.Response, error)
		ctx  func(cancel context.CancelFunc) func(*http.Request) (*http.Response, error)
	}{
		{name: "a certificate not trusted", then: func(*http.Request) (*http.Response, error) { return nil, x509.UnknownAuthorityError{} }},
		{name: "the caller cancels", ctx: func(cancel context.CancelFunc) func(*http.Request) (*http.Response, error) {
			return func(r *http.Request) (*http.Response, error) {
				cancel()
				<-r.Context().Done()
				return nil, r.Context().Err()
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			then := tc.then
			if tc.ctx != nil {
				then = tc.ctx(cancel)
			}
			c, err := client.New("https://w.example", &client.Options{HTTPClient: &http.Client{Transport: &secondAttempt{then: then}},
				Sleep: func(context.Context, time.Duration) error { return nil }})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.SubmitWithKey(ctx, "k", client.Order{Symbol: "MSFT", Side: client.Buy, Quantity: 1})
			var e *client.Error
			if !errors.As(err, &e) || !client.IsRetryable(err) || !errors.Is(err, client.ErrOutcomeUnknown) || e.Problem.OrderID != "o-1" || e.Attempts != 2 {
				t.Errorf("Submit = %v; want the first attempt's outcome_unknown for o-1, retryable, after 2 attempts", err)
			}
		})
	}
}

// TestAClientPrintsNoToken: a caller that logs its Client, in any of
// fmt's forms, logs no token (found by a review).
func TestAClientPrintsNoToken(t *testing.T) {
	c, err := client.New("https://user:pass@w.example/?k=v", &client.Options{Token: "s3cret-token-1234"})
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		if s := fmt.Sprintf(format, c); strings.Contains(s, "s3cret") || strings.Contains(s, "pass") || !strings.Contains(s, "w.example") {
			t.Errorf("%s of a Client = %s; want its host, without the token or the URL's secrets", format, s)
		}
	}
}
