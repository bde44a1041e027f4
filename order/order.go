// Package order validates order requests and mints their receipts exactly as the Worker's original TypeScript did.
package order

import (
	"errors"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/internal/jsjson"
	"github.com/edge-orders/edge-orders/internal/sha256"
)

// ErrInvalid is returned by Parse for every body the reference's validate()
// would reject, whether or not it is JSON. The wrapped message says why,
// for logs; it is not meant for clients.
var ErrInvalid = errors.New("order: invalid order")

// Side is which way an order trades.
type Side string

// The only sides validate() accepts, compared case-sensitively.
const (
	Buy  Side = "buy"
	Sell Side = "sell"
)

// A receipt's status: the order-management system accepted the order, or
// refused it for good.
const (
	StatusAccepted = "accepted"
	StatusRejected = "rejected"
)

// MaxReasonBytes bounds a rejection's reason as a receipt keeps it.
const MaxReasonBytes = 256

// Order is a validated order request. Symbol is a JavaScript string in
// WTF-8: valid UTF-8 except that lone surrogates from \uXXXX escapes are
// kept, in the generalized 3-byte form, so they are printed back as the
// original would print them. Quantity is a positive integer of at most
// MaxQuantity, so exactly the number the client's JSON denotes.
type Order struct {
	Symbol   string
	Side     Side
	Quantity float64
}

// Parse decodes body as request.json() does and validates the result as
// validate() does. It returns an error wrapping ErrInvalid when body is not
// JSON, nests deeper than jsjson.MaxDepth, is not an object, or its own symbol,
// side or quantity member is not a non-empty string, "buy" or "sell", and a
// positive integer respectively. Unlike validate(), it also refuses a
// quantity over MaxQuantity. Other members are ignored; duplicate members
// count only at their last occurrence.
func Parse(body []byte) (Order, error) {
	top, err := jsjson.Parse(body, "symbol", "side", "quantity")
	if err != nil {
		return Order{}, errs.Detail(ErrInvalid, err.Error())
	}
	symbol, side, quantity := top.Get("symbol"), top.Get("side"), top.Get("quantity")
	switch {
	case !top.IsObject():
		return Order{}, errs.Detail(ErrInvalid, "body is not a JSON object")
	case symbol.Kind != jsjson.String || symbol.Str == "":
		return Order{}, errs.Detail(ErrInvalid, "symbol must be a non-empty string")
	case side.Kind != jsjson.String || side.Str != string(Buy) && side.Str != string(Sell):
		return Order{}, errs.Detail(ErrInvalid, "side must be "+strconv.Quote(string(Buy))+" or "+strconv.Quote(string(Sell)))
	case quantity.Kind != jsjson.Number || !isPositiveInteger(quantity.Num):
		return Order{}, errs.Detail(ErrInvalid, "quantity must be a positive integer")
	case quantity.Num > MaxQuantity:
		return Order{}, errs.Detail(ErrInvalid, "quantity must be at most "+jsjson.FormatNumber(MaxQuantity)+
			" (2^53 - 1): a larger one cannot be read exactly")
	}
	return Order{Symbol: symbol.Str, Side: Side(side.Str), Quantity: quantity.Num}, nil
}

// MaxQuantity is the largest quantity accepted: Number.MAX_SAFE_INTEGER.
// Above it JavaScript's JSON.parse, and so the reference, silently rounds
// (9007199254740993 becomes 9007199254740992); for a trading desk a changed
// quantity is worse than a refusal, so this is the one place where Parse
// refuses what the reference accepts.
const MaxQuantity = 1<<53 - 1

// isPositiveInteger is Number.isInteger(x) && x > 0.
func isPositiveInteger(x float64) bool {
	return x > 0 && !math.IsInf(x, 0) && x == math.Trunc(x)
}

// Fingerprint returns a lowercase hex SHA-256 that identifies o, for
// telling whether an idempotency key is being reused for a different
// order. It hashes the UTF-8 of JSON.stringify({symbol, side, quantity}),
// which is unambiguous and the same for every body that parses to o,
// however it was spaced, ordered or escaped.
func (o Order) Fingerprint() string {
	sum := sha256.Sum256(o.JSON())
	const digits = "0123456789abcdef"
	var hex [2 * sha256.Size]byte
	for i, c := range sum {
		hex[2*i], hex[2*i+1] = digits[c>>4], digits[c&0x0f]
	}
	return string(hex[:])
}

// JSON returns o as JSON.stringify({symbol, side, quantity}) writes it:
// what Fingerprint hashes, and what Parse reads back as o. Stores keep an
// order so, to call the gateway again without the client.
func (o Order) JSON() []byte {
	return append(appendMembers([]byte{'{'}, o), '}')
}

// appendMembers appends o's members as JSON.stringify writes them, without
// the surrounding braces so receipts can share it.
func appendMembers(b []byte, o Order) []byte {
	b = append(b, `"symbol":`...)
	b = jsjson.AppendString(b, o.Symbol)
	b = append(b, `,"side":`...)
	b = jsjson.AppendString(b, string(o.Side))
	b = append(b, `,"quantity":`...)
	return jsjson.AppendNumber(b, o.Quantity)
}

// Receipt is what placing an order returns to the client, and what is
// stored and replayed for its key.
type Receipt struct {
	OrderID    string // a lowercase random (version 4) UUID
	Status     string // StatusAccepted or StatusRejected
	Order      Order
	AcceptedAt time.Time
	// Reason is why the order was rejected; only a rejected receipt has one.
	Reason string
}

// JSON returns the receipt exactly as the original's
// JSON.stringify({orderId, status, symbol, side, quantity, acceptedAt})
// wrote it: those members in that order, no spaces, acceptedAt as
// toISOString() prints it. A rejected receipt adds its reason, cut to
// MaxReasonBytes at a character boundary. Receipt deliberately has no
// MarshalJSON method: encoding/json would re-escape its output (<, >, &,
// U+2028, U+2029) and it would no longer match.
func (r Receipt) JSON() []byte {
	b := make([]byte, 0, 128+len(r.Order.Symbol)+len(r.Reason))
	b = append(b, `{"orderId":`...)
	b = jsjson.AppendString(b, r.OrderID)
	b = append(b, `,"status":`...)
	b = jsjson.AppendString(b, r.Status)
	b = append(b, ',')
	b = appendMembers(b, r.Order)
	b = append(b, `,"acceptedAt":"`...)
	b = jsjson.AppendISOTime(b, r.AcceptedAt)
	b = append(b, '"')
	if r.Status == StatusRejected {
		b = append(b, `,"reason":`...)
		b = jsjson.AppendString(b, TruncateReason(r.Reason))
	}
	return append(b, '}')
}

// TruncateReason cuts reason to at most MaxReasonBytes, at a character
// boundary: a gateway's reason is stored and replayed for every retry.
func TruncateReason(reason string) string {
	if len(reason) <= MaxReasonBytes {
		return reason
	}
	cut := MaxReasonBytes
	for cut > 0 && !utf8.RuneStart(reason[cut]) {
		cut--
	}
	return reason[:cut]
}

// ReceiptFields reads a stored receipt's order id, status and reason, for
// logs and for answering a replayed rejection; a member it cannot read is
// empty.
func ReceiptFields(receipt []byte) (orderID, status, reason string) {
	doc, err := jsjson.Parse(receipt, "orderId", "status", "reason")
	if err != nil {
		return "", "", ""
	}
	return doc.Get("orderId").Str, doc.Get("status").Str, doc.Get("reason").Str
}

// ReceiptAcceptedAt reads a stored receipt's acceptedAt; the zero time if
// it has none that reads as a time.
func ReceiptAcceptedAt(receipt []byte) time.Time {
	doc, err := jsjson.Parse(receipt, "acceptedAt")
	if err != nil {
		return time.Time{}
	}
	t, _ := jsjson.ParseRFC3339(doc.Get("acceptedAt").Str)
	return t
}
