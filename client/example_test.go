package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/edge-orders/edge-orders/client"
)

// Submit places one order under a fresh Idempotency-Key, retrying as
// needed; a retry never places a second order.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	c, err := client.New("http://127.0.0.1:8787", nil)
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.Submit(ctx, client.Order{Symbol: "MSFT", Side: client.Buy, Quantity: 100})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Receipt.OrderID, res.Replay)
}

// A failure says whether the same order may be sent again, under the same
// key, to learn its outcome.
func ExampleIsRetryable() {
	c, err := client.New("http://127.0.0.1:8787", &client.Options{Token: os.Getenv("EDGE_ORDERS_TOKEN")})
	if err != nil {
		log.Fatal(err) // a token with a newline, say; the error never shows it
	}
	order := client.Order{Symbol: "MSFT", Side: client.Sell, Quantity: 5}
	res, err := c.SubmitWithKey(context.Background(), "order-2026-0001", order)
	var e *client.Error
	switch {
	case err == nil:
		fmt.Println("placed", res.Receipt.OrderID)
	case errors.Is(err, client.ErrKeyReused):
		fmt.Println("order-2026-0001 names another order")
	case client.IsRetryable(err) && errors.As(err, &e):
		fmt.Printf("unknown outcome; send again under %s after %v\n", e.Key, e.RetryAfter)
	default:
		log.Fatal(err)
	}
}

// Lookup tells whether an order was placed under a key, without placing
// one, and where an order whose outcome is unknown stands.
func ExampleClient_Lookup() {
	c, err := client.New("http://127.0.0.1:8787", nil)
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.Lookup(context.Background(), "order-2026-0001")
	var e *client.Error
	errors.As(err, &e)
	switch {
	case err == nil:
		fmt.Println("placed", res.Receipt.OrderID, "at", res.Receipt.AcceptedAt)
	case errors.Is(err, client.ErrNotFound):
		fmt.Println("nothing was placed under this key")
	case errors.Is(err, client.ErrInProgress):
		fmt.Println("a request still holds the key; ask again after", e.RetryAfter)
	case errors.Is(err, client.ErrRejected):
		fmt.Println("refused:", e.Problem.Detail)
	case errors.Is(err, client.ErrOutcomeUnresolved): // before ErrOutcomeUnknown, which it matches too
		fmt.Println("the OMS never confirmed order", e.Problem.OrderID, "- keep the key and reconcile")
	case errors.Is(err, client.ErrOutcomeUnknown):
		fmt.Println("settling order", e.Problem.OrderID, "after", e.Problem.Attempts, "attempts; next at", e.Problem.NextAttemptAt)
	default:
		log.Fatal(err)
	}
}
