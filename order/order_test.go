package order_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/order"
)

// parseCase is one body and what the reference's
// validate(await request.json().catch(() => null)) makes of it.
type parseCase struct {
	name   string
	body   string
	want   order.Order
	reject bool
	// deviation says why Parse deliberately rejects a body that Node
	// accepts; the parity test checks that Node really does accept it.
	deviation string
}

func aapl(side order.Side, quantity float64) order.Order {
	return order.Order{Symbol: "AAPL", Side: side, Quantity: quantity}
}

// withQuantity and withSymbol build an otherwise valid body around one
// literal, which keeps the table about the part under test.
func withQuantity(literal string) string {
	return `{"symbol":"AAPL","side":"buy","quantity":` + literal + `}`
}

func withSymbol(literal string) string {
	return `{"symbol":` + literal + `,"side":"buy","quantity":1}`
}

// nestedArrays returns a valid order whose nesting depth, as jsjson.MaxDepth
// counts it, is depth: the top-level object plus depth-1 arrays.
func nestedArrays(depth int) string {
	return `{"x":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `,"symbol":"A","side":"buy","quantity":1}`
}

// nestedObjects is nestedArrays with objects: the top-level object, depth-2
// objects and an innermost {}.
func nestedObjects(depth int) string {
	return `{"symbol":"A","side":"buy","quantity":1,"x":` + strings.Repeat(`{"x":`, depth-2) + `{}` + strings.Repeat("}", depth-2) + `}`
}

// The deliberate differences from Node, the engine the parity test runs.
const (
	deeperThanMaxDepth = "V8 nests deeper; jsjson.MaxDepth bounds what a hostile body can cost"
)

var parseCases = []parseCase{
	// Valid bodies.
	{name: "buy", body: `{"symbol":"AAPL","side":"buy","quantity":10}`, want: aapl(order.Buy, 10)},
	{name: "sell", body: `{"symbol":"AAPL","side":"sell","quantity":10}`, want: aapl(order.Sell, 10)},
	{name: "members in any order", body: `{"quantity":10,"side":"buy","symbol":"AAPL"}`, want: aapl(order.Buy, 10)},
	{name: "JSON whitespace everywhere", body: " \t\r\n{ \"symbol\" :\t\"AAPL\" ,\n\"side\"\r: \"buy\" , \"quantity\" : 10 } \n", want: aapl(order.Buy, 10)},
	{name: "extra members ignored", body: `{"symbol":"AAPL","side":"buy","quantity":10,"note":"hi","price":12.5,"ok":true,"none":null}`, want: aapl(order.Buy, 10)},
	{name: "extra member 1e400 ignored", body: `{"symbol":"AAPL","side":"buy","quantity":10,"big":1e400,"tiny":-1e-400}`, want: aapl(order.Buy, 10)},
	{name: "extra nested arrays and objects ignored", body: `{"meta":{"a":[1,{"b":[true,false,null,[]]}],"c":{},"symbol":"X"},"symbol":"AAPL","side":"buy","quantity":10}`, want: aapl(order.Buy, 10)},

	// quantity: Number.isInteger(q) && q > 0 on the parsed double.
	{name: "quantity 1.0 accepted", body: withQuantity(`1.0`), want: aapl(order.Buy, 1)},
	{name: "quantity 1e2 accepted", body: withQuantity(`1e2`), want: aapl(order.Buy, 100)},
	{name: "quantity 1E+2 accepted", body: withQuantity(`1E+2`), want: aapl(order.Buy, 100)},
	{name: "quantity 0.5e1 accepted", body: withQuantity(`0.5e1`), want: aapl(order.Buy, 5)},
	{name: "quantity 1.000000000000000000001 rounds to 1", body: withQuantity(`1.000000000000000000001`), want: aapl(order.Buy, 1)},
	// The one deliberate difference from validate(), which accepts these
	// and, from 2**53 + 1 on, rounds them.
	{name: "quantity 2**53-1 accepted", body: withQuantity(`9007199254740991`), want: aapl(order.Buy, order.MaxQuantity)},
	{name: "quantity 2**53 refused", body: withQuantity(`9007199254740992`), reject: true},
	{name: "quantity 2**53+1 refused, not rounded", body: withQuantity(`9007199254740993`), reject: true},
	{name: "quantity 1e21 refused", body: withQuantity(`1e21`), reject: true},
	{name: "quantity largest double refused", body: withQuantity(`1.7976931348623158e308`), reject: true},
	{name: "quantity 1.5 rejected", body: withQuantity(`1.5`), reject: true},
	{name: "quantity 0 rejected", body: withQuantity(`0`), reject: true},
	{name: "quantity -0 rejected", body: withQuantity(`-0`), reject: true},
	{name: "quantity -1 rejected", body: withQuantity(`-1`), reject: true},
	{name: "quantity 1e400 is Infinity and rejected", body: withQuantity(`1e400`), reject: true},
	{name: "quantity just above the largest double is Infinity", body: withQuantity(`1.797693134862315808e308`), reject: true},
	{name: "quantity 5e-324 rejected", body: withQuantity(`5e-324`), reject: true},
	{name: "quantity 1e-400 is 0 and rejected", body: withQuantity(`1e-400`), reject: true},
	{name: "quantity string rejected", body: withQuantity(`"100"`), reject: true},
	{name: "quantity true rejected", body: withQuantity(`true`), reject: true},
	{name: "quantity null rejected", body: withQuantity(`null`), reject: true},
	{name: "quantity array rejected", body: withQuantity(`[1]`), reject: true},
	{name: "quantity missing rejected", body: `{"symbol":"AAPL","side":"buy"}`, reject: true},
	{name: "quantity NaN rejected", body: withQuantity(`NaN`), reject: true},
	{name: "quantity Infinity rejected", body: withQuantity(`Infinity`), reject: true},
	{name: "quantity leading zero rejected", body: withQuantity(`01`), reject: true},
	{name: "quantity plus sign rejected", body: withQuantity(`+1`), reject: true},
	{name: "quantity .5 rejected", body: withQuantity(`.5`), reject: true},
	{name: "quantity 1. rejected", body: withQuantity(`1.`), reject: true},
	{name: "quantity 1e rejected", body: withQuantity(`1e`), reject: true},
	{name: "quantity 1e+ rejected", body: withQuantity(`1e+`), reject: true},
	{name: "quantity lone minus rejected", body: withQuantity(`-`), reject: true},
	{name: "quantity hex rejected", body: withQuantity(`0x10`), reject: true},
	{name: "quantity digit separator rejected", body: withQuantity(`1_000`), reject: true},

	// symbol: typeof string && length > 0.
	{name: "symbol single space accepted", body: withSymbol(`" "`), want: order.Order{Symbol: " ", Side: order.Buy, Quantity: 1}},
	{name: "symbol NUL escape accepted", body: withSymbol(`"\u0000"`), want: order.Order{Symbol: "\x00", Side: order.Buy, Quantity: 1}},
	{name: "symbol DEL accepted raw", body: withSymbol("\"\x7f\""), want: order.Order{Symbol: "\x7f", Side: order.Buy, Quantity: 1}},
	{name: "symbol escapes decoded", body: withSymbol(`"\"\\\/\b\f\n\r\t\u00C9\u00e9"`), want: order.Order{Symbol: "\"\\/\b\f\n\r\tÉé", Side: order.Buy, Quantity: 1}},
	{name: "symbol lone surrogate kept", body: withSymbol(`"\ud800"`), want: order.Order{Symbol: "\xed\xa0\x80", Side: order.Buy, Quantity: 1}},
	{name: "symbol surrogate pair combined", body: withSymbol(`"\uD83D\uDE00"`), want: order.Order{Symbol: "😀", Side: order.Buy, Quantity: 1}},
	{name: "symbol reversed pair kept as two lone surrogates", body: withSymbol(`"\ude00\ud83d"`), want: order.Order{Symbol: "\xed\xb8\x80\xed\xa0\xbd", Side: order.Buy, Quantity: 1}},
	{name: "symbol empty rejected", body: withSymbol(`""`), reject: true},
	{name: "symbol missing rejected", body: `{"side":"buy","quantity":1}`, reject: true},
	{name: "symbol number rejected", body: withSymbol(`1`), reject: true},
	{name: "symbol null rejected", body: withSymbol(`null`), reject: true},
	{name: "symbol array rejected", body: withSymbol(`["AAPL"]`), reject: true},
	{name: "symbol raw tab rejected", body: withSymbol("\"A\tB\""), reject: true},
	{name: "symbol raw newline rejected", body: withSymbol("\"A\nB\""), reject: true},
	{name: "symbol raw NUL rejected", body: withSymbol("\"A\x00B\""), reject: true},
	{name: "symbol single quotes rejected", body: withSymbol(`'AAPL'`), reject: true},
	{name: "symbol unknown escape rejected", body: withSymbol(`"\x41"`), reject: true},
	{name: "symbol escaped single quote rejected", body: withSymbol(`"\'"`), reject: true},
	{name: "symbol short unicode escape rejected", body: withSymbol(`"\u12"`), reject: true},
	{name: "symbol non-hex unicode escape rejected", body: withSymbol(`"\u12G4"`), reject: true},
	{name: "symbol unterminated rejected", body: `{"symbol":"AAPL`, reject: true},

	// Invalid UTF-8 is replaced by the WHATWG decoder before JSON.parse
	// sees it, one U+FFFD per maximal subpart.
	{name: "invalid UTF-8 in symbol replaced", body: withSymbol("\"A\xffB\""), want: order.Order{Symbol: "A\uFFFDB", Side: order.Buy, Quantity: 1}},
	{name: "truncated 3-byte sequence is one U+FFFD", body: withSymbol("\"\xe2\x82\""), want: order.Order{Symbol: "\uFFFD", Side: order.Buy, Quantity: 1}},
	{name: "truncated 4-byte sequence is one U+FFFD", body: withSymbol("\"\xf0\x9f\x98\""), want: order.Order{Symbol: "\uFFFD", Side: order.Buy, Quantity: 1}},
	{name: "overlong encoding is one U+FFFD per byte", body: withSymbol("\"\xc0\xaf\""), want: order.Order{Symbol: "\uFFFD\uFFFD", Side: order.Buy, Quantity: 1}},
	{name: "encoded surrogate is one U+FFFD per byte", body: withSymbol("\"\xed\xa0\x80\""), want: order.Order{Symbol: "\uFFFD\uFFFD\uFFFD", Side: order.Buy, Quantity: 1}},
	{name: "above U+10FFFF is one U+FFFD per byte", body: withSymbol("\"\xf4\x90\x80\x80\""), want: order.Order{Symbol: "\uFFFD\uFFFD\uFFFD\uFFFD", Side: order.Buy, Quantity: 1}},
	{name: "truncated sequence before ASCII keeps the ASCII", body: withSymbol("\"\xe2\x82A\""), want: order.Order{Symbol: "\uFFFDA", Side: order.Buy, Quantity: 1}},
	{name: "invalid UTF-8 outside strings rejected", body: withQuantity("1") + "\xff", reject: true},
	// workerd at the reference's compatibility date keeps the BOM, and
	// JSON.parse does not take it for white space.
	{name: "UTF-8 BOM rejected", body: "\xef\xbb\xbf" + withQuantity("1"), reject: true},
	{name: "two UTF-8 BOMs rejected", body: "\xef\xbb\xbf\xef\xbb\xbf" + withQuantity("1"), reject: true},
	{name: "BOM after whitespace rejected", body: " \xef\xbb\xbf" + withQuantity("1"), reject: true},
	{name: "UTF-16 body rejected", body: "\xff\xfe{\x00}\x00", reject: true},
	{name: "no-break space is not JSON whitespace", body: "\u00a0" + withQuantity("1"), reject: true},

	// side: === "buy" || === "sell".
	{name: "side escaped buy accepted", body: `{"symbol":"AAPL","side":"\u0062uy","quantity":1}`, want: aapl(order.Buy, 1)},
	{name: "side escaped sell accepted", body: `{"symbol":"AAPL","side":"sel\u006C","quantity":1}`, want: aapl(order.Sell, 1)},
	{name: "side BUY rejected", body: `{"symbol":"AAPL","side":"BUY","quantity":1}`, reject: true},
	{name: "side with space rejected", body: `{"symbol":"AAPL","side":" buy","quantity":1}`, reject: true},
	{name: "side missing rejected", body: `{"symbol":"AAPL","quantity":1}`, reject: true},
	{name: "side number rejected", body: `{"symbol":"AAPL","side":1,"quantity":1}`, reject: true},

	// Keys are case-sensitive, unescaped, and the last duplicate wins.
	{name: "SYMBOL is not symbol", body: `{"SYMBOL":"AAPL","side":"buy","quantity":1}`, reject: true},
	{name: "Quantity is not quantity", body: `{"symbol":"AAPL","side":"buy","Quantity":1}`, reject: true},
	{name: "escaped key matches", body: `{"\u0073ymbol":"AAPL","side":"buy","qu\u0061ntity":1}`, want: aapl(order.Buy, 1)},
	{name: "duplicate symbol last valid wins", body: `{"symbol":"","symbol":"MSFT","side":"buy","quantity":1}`, want: order.Order{Symbol: "MSFT", Side: order.Buy, Quantity: 1}},
	{name: "duplicate symbol last invalid wins", body: `{"symbol":"MSFT","side":"buy","quantity":1,"symbol":""}`, reject: true},
	{name: "duplicate side last valid wins", body: `{"symbol":"AAPL","side":"hold","side":"sell","quantity":1}`, want: aapl(order.Sell, 1)},
	{name: "duplicate side last invalid wins", body: `{"symbol":"AAPL","side":"sell","side":"hold","quantity":1}`, reject: true},
	{name: "duplicate quantity last valid wins", body: `{"symbol":"AAPL","side":"buy","quantity":-1,"quantity":7}`, want: aapl(order.Buy, 7)},
	{name: "duplicate quantity last invalid wins", body: `{"symbol":"AAPL","side":"buy","quantity":7,"quantity":1.5}`, reject: true},
	{name: "members of nested objects do not count", body: `{"order":{"symbol":"AAPL","side":"buy","quantity":1}}`, reject: true},
	{name: "__proto__ member is an own property", body: `{"__proto__":{"symbol":"AAPL"},"side":"buy","quantity":1}`, reject: true},

	// Not a single JSON object.
	{name: "empty body rejected", body: ``, reject: true},
	{name: "whitespace-only body rejected", body: " \n\t\r ", reject: true},
	{name: "top-level array rejected", body: `[{"symbol":"AAPL","side":"buy","quantity":1}]`, reject: true},
	{name: "top-level string rejected", body: `"AAPL"`, reject: true},
	{name: "top-level number rejected", body: `1`, reject: true},
	{name: "top-level null rejected", body: `null`, reject: true},
	{name: "top-level true rejected", body: `true`, reject: true},
	{name: "empty object rejected", body: `{}`, reject: true},
	{name: "trailing garbage rejected", body: withQuantity("1") + "x", reject: true},
	{name: "two objects rejected", body: withQuantity("1") + withQuantity("1"), reject: true},
	{name: "trailing comma in object rejected", body: `{"symbol":"AAPL","side":"buy","quantity":1,}`, reject: true},
	{name: "trailing comma in ignored array rejected", body: `{"symbol":"AAPL","side":"buy","quantity":1,"x":[1,]}`, reject: true},
	{name: "single-quoted keys rejected", body: `{'symbol':"AAPL","side":"buy","quantity":1}`, reject: true},
	{name: "unquoted keys rejected", body: `{symbol:"AAPL","side":"buy","quantity":1}`, reject: true},
	{name: "block comment rejected", body: `{/* c */"symbol":"AAPL","side":"buy","quantity":1}`, reject: true},
	{name: "line comment rejected", body: "{\"symbol\":\"AAPL\",\"side\":\"buy\",\"quantity\":1 // c\n}", reject: true},
	{name: "missing colon rejected", body: `{"symbol" "AAPL","side":"buy","quantity":1}`, reject: true},
	{name: "missing comma rejected", body: `{"symbol":"AAPL" "side":"buy","quantity":1}`, reject: true},
	{name: "unterminated object rejected", body: `{"symbol":"AAPL","side":"buy","quantity":1`, reject: true},
	{name: "misspelled literal in ignored member rejected", body: `{"symbol":"AAPL","side":"buy","quantity":1,"x":tru}`, reject: true},
	{name: "undefined in ignored member rejected", body: `{"symbol":"AAPL","side":"buy","quantity":1,"x":undefined}`, reject: true},

	// Depth counts open arrays and objects, the top-level object being 1.
	{name: "depth 64 of arrays accepted", body: nestedArrays(64), want: order.Order{Symbol: "A", Side: order.Buy, Quantity: 1}},
	{name: "depth 64 of objects accepted", body: nestedObjects(64), want: order.Order{Symbol: "A", Side: order.Buy, Quantity: 1}},
	{name: "depth 65 of arrays rejected", body: nestedArrays(65), reject: true, deviation: deeperThanMaxDepth},
	{name: "depth 65 of objects rejected", body: nestedObjects(65), reject: true, deviation: deeperThanMaxDepth},
}

// show prints an order with its symbol's bytes visible.
func show(o order.Order) string {
	return fmt.Sprintf("{Symbol:%+q Side:%q Quantity:%v}", o.Symbol, o.Side, o.Quantity)
}

func TestParse(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := order.Parse([]byte(tc.body))
			if tc.reject {
				if !errors.Is(err, order.ErrInvalid) {
					t.Errorf("Parse(%q) = %s, %v; want an error wrapping ErrInvalid", tc.body, show(got), err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Parse(%q) = %s, %v; want %s, nil", tc.body, show(got), err, show(tc.want))
			}
		})
	}
}

// fixedReceipt is a receipt whose random and time-dependent parts are
// pinned, so its JSON can be compared byte for byte.
func fixedReceipt(o order.Order) order.Receipt {
	return order.Receipt{
		OrderID:    "0f8c6a5e-3d2b-4c1a-9e8f-7a6b5c4d3e2f",
		Status:     order.StatusAccepted,
		Order:      o,
		AcceptedAt: time.Date(2024, 1, 2, 3, 4, 5, 678_901_234, time.UTC),
	}
}

// receiptJSON is the expected receipt of fixedReceipt around the members
// JSON.stringify writes for the order.
func receiptJSON(members string) string {
	return `{"orderId":"0f8c6a5e-3d2b-4c1a-9e8f-7a6b5c4d3e2f","status":"accepted",` + members + `,"acceptedAt":"2024-01-02T03:04:05.678Z"}`
}

func TestReceiptJSON(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"plain", `{"symbol":"AAPL","side":"buy","quantity":10}`, `"symbol":"AAPL","side":"buy","quantity":10`},
		{"HTML characters stay literal", withSymbol(`"<a&b>"`), `"symbol":"<a&b>","side":"buy","quantity":1`},
		{"line and paragraph separators stay literal", withSymbol("\"\\u2028\u2029\""), "\"symbol\":\"\u2028\u2029\",\"side\":\"buy\",\"quantity\":1"},
		{"lone high surrogate escaped", withSymbol(`"a\uD800b"`), `"symbol":"a\ud800b","side":"buy","quantity":1`},
		{"lone low surrogate escaped in lowercase", withSymbol(`"\uDFFF"`), `"symbol":"\udfff","side":"buy","quantity":1`},
		{"surrogate pair printed literally", withSymbol(`"\ud83d\ude00"`), `"symbol":"😀","side":"buy","quantity":1`},
		{"high surrogate then pair", withSymbol(`"\ud83d\ud83d\ude00"`), `"symbol":"\ud83d😀","side":"buy","quantity":1`},
		{"control characters", withSymbol(`"\u0000\u0001\b\f\n\r\t\u000b\u001F"`), `"symbol":"\u0000\u0001\b\f\n\r\t\u000b\u001f","side":"buy","quantity":1`},
		{"DEL stays literal", withSymbol(`"\u007f"`), "\"symbol\":\"\x7f\",\"side\":\"buy\",\"quantity\":1"},
		{"quotes and backslashes", withSymbol(`"\"\\\/"`), `"symbol":"\"\\/","side":"buy","quantity":1`},
		{"replacement for invalid UTF-8", withSymbol("\"\xe2\x82\""), "\"symbol\":\"\uFFFD\",\"side\":\"buy\",\"quantity\":1"},
		{"escaped side", `{"symbol":"AAPL","side":"\u0073ell","quantity":1}`, `"symbol":"AAPL","side":"sell","quantity":1`},
		{"quantity 1.0 printed as 1", withQuantity(`1.0`), `"symbol":"AAPL","side":"buy","quantity":1`},
		{"quantity 1e2 printed as 100", withQuantity(`1e2`), `"symbol":"AAPL","side":"buy","quantity":100`},
		{"quantity 2**53-1 printed exactly", withQuantity(`9007199254740991`), `"symbol":"AAPL","side":"buy","quantity":9007199254740991`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := order.Parse([]byte(tc.body))
			if err != nil {
				t.Fatalf("Parse(%q) = %v", tc.body, err)
			}
			got, want := string(fixedReceipt(o).JSON()), receiptJSON(tc.want)
			if got != want {
				t.Errorf("JSON() of %q\n got %s\nwant %s", tc.body, got, want)
			}
		})
	}
}

// TestReceiptJSONOfConstructedOrders covers orders that did not come from
// Parse: the output must still be what JSON.stringify would write for the
// same JavaScript values, and valid JSON.
func TestReceiptJSONOfConstructedOrders(t *testing.T) {
	tests := []struct {
		name  string
		order order.Order
		want  string
	}{
		{"NaN quantity is null", order.Order{Symbol: "A", Side: order.Buy, Quantity: math.NaN()}, `"symbol":"A","side":"buy","quantity":null`},
		{"infinite quantity is null", order.Order{Symbol: "A", Side: order.Buy, Quantity: math.Inf(1)}, `"symbol":"A","side":"buy","quantity":null`},
		{"negative zero is 0", order.Order{Symbol: "A", Side: order.Buy, Quantity: math.Copysign(0, -1)}, `"symbol":"A","side":"buy","quantity":0`},
		{"bytes that are not WTF-8 become U+FFFD", order.Order{Symbol: "A\xff\xe2\x82", Side: order.Sell, Quantity: 1}, "\"symbol\":\"A\uFFFD\uFFFD\uFFFD\",\"side\":\"sell\",\"quantity\":1"},
		{"adjacent WTF-8 surrogates form a pair", order.Order{Symbol: "\xed\xa0\xbd\xed\xb8\x80", Side: order.Buy, Quantity: 1}, `"symbol":"😀","side":"buy","quantity":1`},
		{"unknown side is escaped too", order.Order{Symbol: "A", Side: "\"", Quantity: 1}, `"symbol":"A","side":"\"","quantity":1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, want := string(fixedReceipt(tc.order).JSON()), receiptJSON(tc.want)
			if got != want {
				t.Errorf("JSON() of %s\n got %s\nwant %s", show(tc.order), got, want)
			}
		})
	}
}

// TestRejectedReceipt checks a rejected receipt: the accepted one's
// members, then the reason, cut to MaxReasonBytes at a character boundary.
func TestRejectedReceipt(t *testing.T) {
	base := fixedReceipt(aapl(order.Buy, 10))
	accepted := string(base.JSON())
	long := strings.Repeat("x", order.MaxReasonBytes-1) + "é" // é straddles the limit
	tests := []struct {
		name, reason, wantReason string
	}{
		{"short reason kept", "insufficient buying power", `"insufficient buying power"`},
		{"reason escaped as JSON.stringify does", "a \"b\"\n", `"a \"b\"\n"`},
		{"long reason cut before a split character", long, `"` + strings.Repeat("x", order.MaxReasonBytes-1) + `"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := base
			r.Status, r.Reason = order.StatusRejected, tc.reason
			got := string(r.JSON())
			want := strings.Replace(accepted[:len(accepted)-1], `"status":"accepted"`, `"status":"rejected"`, 1) + `,"reason":` + tc.wantReason + "}"
			if got != want {
				t.Errorf("JSON() =\n %s\nwant\n %s", got, want)
			}
			id, status, reason := order.ReceiptFields([]byte(got))
			if id != r.OrderID || status != order.StatusRejected || reason != order.TruncateReason(tc.reason) {
				t.Errorf("ReceiptFields = %q, %q, %q; want the receipt's", id, status, reason)
			}
		})
	}
	if got := string(base.JSON()); strings.Contains(got, "reason") {
		t.Errorf("accepted receipt %s has a reason", got)
	}
}

func TestReceiptAcceptedAt(t *testing.T) {
	tests := []struct {
		name string
		at   time.Time
		want string
	}{
		{"milliseconds truncated, not rounded", time.Date(2024, 1, 2, 3, 4, 5, 678_999_999, time.UTC), "2024-01-02T03:04:05.678Z"},
		{"last nanosecond of a second stays in it", time.Date(2024, 12, 31, 23, 59, 59, 999_999_999, time.UTC), "2024-12-31T23:59:59.999Z"},
		{"whole second has .000", time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), "2024-01-02T03:04:05.000Z"},
		{"other zones converted to UTC", time.Date(2024, 1, 1, 1, 0, 0, 0, time.FixedZone("UTC+2", 2*3600)), "2023-12-31T23:00:00.000Z"},
		{"Unix epoch", time.Unix(0, 0), "1970-01-01T00:00:00.000Z"},
		{"before the epoch", time.UnixMilli(-1), "1969-12-31T23:59:59.999Z"},
		{"year 0", time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), "0000-01-01T00:00:00.000Z"},
		{"negative year", time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), "-000001-01-01T00:00:00.000Z"},
		{"year 10000", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), "+010000-01-01T00:00:00.000Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := order.Receipt{OrderID: "id", Status: order.StatusAccepted, Order: aapl(order.Buy, 1), AcceptedAt: tc.at}
			got := string(r.JSON())
			if want := `,"acceptedAt":"` + tc.want + `"}`; !strings.HasSuffix(got, want) {
				t.Errorf("JSON() = %s, want it to end with %s", got, want)
			}
		})
	}
}

func TestFingerprint(t *testing.T) {
	mustParse := func(t *testing.T, body string) order.Order {
		t.Helper()
		o, err := order.Parse([]byte(body))
		if err != nil {
			t.Fatalf("Parse(%q) = %v", body, err)
		}
		return o
	}

	t.Run("pinned value", func(t *testing.T) {
		// Fingerprints are stored; changing the encoding breaks every
		// stored one. This is sha256(JSON.stringify({symbol, side, quantity})).
		got := mustParse(t, `{"symbol":"AAPL","side":"buy","quantity":10}`).Fingerprint()
		if want := "743ee7d243e383b3260f71e7701c9b8cf606ac1ca1c5c3f455efe330a138d5d9"; got != want {
			t.Errorf("Fingerprint() = %s, want %s", got, want)
		}
	})

	base := `{"symbol":"A\u00e9😀\ud800","side":"buy","quantity":10}`
	same := []struct{ name, body string }{
		{"reformatted", " {\n\t\"symbol\" : \"A\u00e9😀\\ud800\" ,\r\n \"side\" : \"buy\" , \"quantity\" : 10 }\n"},
		{"reordered", `{"quantity":10,"side":"buy","symbol":"A\u00e9😀\ud800"}`},
		{"escaped differently", `{"\u0073ymbol":"\u0041\u00E9\ud83d\ude00\uD800","side":"b\u0075y","quantity":10}`},
		{"extra and duplicate members", `{"symbol":"X","x":[{}],"symbol":"Aé😀\ud800","side":"buy","quantity":1e1,"note":1e400}`},
		{"quantity spelled differently", `{"symbol":"Aé😀\ud800","side":"buy","quantity":10.0e0}`},
	}
	want := mustParse(t, base).Fingerprint()
	for _, tc := range same {
		t.Run("same when "+tc.name, func(t *testing.T) {
			if got := mustParse(t, tc.body).Fingerprint(); got != want {
				t.Errorf("Fingerprint of %q = %s, want %s as for %q", tc.body, got, want, base)
			}
		})
	}

	different := []struct {
		name string
		a, b order.Order
	}{
		{"symbol", aapl(order.Buy, 10), order.Order{Symbol: "MSFT", Side: order.Buy, Quantity: 10}},
		{"symbol case", aapl(order.Buy, 10), order.Order{Symbol: "aapl", Side: order.Buy, Quantity: 10}},
		{"side", aapl(order.Buy, 10), aapl(order.Sell, 10)},
		{"quantity", aapl(order.Buy, 10), aapl(order.Buy, 11)},
		{"quantity beyond 2**53", aapl(order.Buy, 9007199254740992), aapl(order.Buy, 9007199254740994)},
		{"lone surrogate versus replacement", mustParse(t, withSymbol(`"\ud800"`)), mustParse(t, withSymbol("\"\xed\""))},
		{"boundary between symbol and side", order.Order{Symbol: "ab", Side: "c", Quantity: 1}, order.Order{Symbol: "a", Side: "bc", Quantity: 1}},
		{"symbol containing the encoding", order.Order{Symbol: `A","side":"buy`, Side: order.Sell, Quantity: 1}, order.Order{Symbol: "A", Side: order.Buy, Quantity: 1}},
	}
	for _, tc := range different {
		t.Run("different "+tc.name, func(t *testing.T) {
			if a, b := tc.a.Fingerprint(), tc.b.Fingerprint(); a == b {
				t.Errorf("Fingerprint of %s and %s both = %s, want them to differ", show(tc.a), show(tc.b), a)
			}
		})
	}
}

// TestReceiptAcceptedAtReadsItBack: ReceiptAcceptedAt reads the time a
// receipt or a rejection was stored with, to the millisecond; anything
// else is the zero time.
func TestReceiptAcceptedAtReadsItBack(t *testing.T) {
	at := time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC)
	o := order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}
	for _, tc := range []struct {
		name    string
		receipt []byte
		want    time.Time
	}{
		{"a receipt", order.Receipt{OrderID: "id", Status: order.StatusAccepted, Order: o, AcceptedAt: at}.JSON(), at},
		{"a rejection", order.Receipt{OrderID: "id", Status: order.StatusRejected, Order: o, AcceptedAt: at, Reason: "halted"}.JSON(), at},
		{"no acceptedAt", []byte(`{"orderId":"id"}`), time.Time{}},
		{"not a time", []byte(`{"acceptedAt":"yesterday"}`), time.Time{}},
		{"not JSON", []byte(`accepted`), time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := order.ReceiptAcceptedAt(tc.receipt); !got.Equal(tc.want) {
				t.Errorf("ReceiptAcceptedAt(%s) = %v, want %v", tc.receipt, got, tc.want)
			}
		})
	}
}
