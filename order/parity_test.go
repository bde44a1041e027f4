package order_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/internal/jsjson"
	"github.com/edge-orders/edge-orders/order"
)

// node returns the path of a Node.js new enough to have Response (18+), or
// skips the test: the parity tests need the real JavaScript engine, but the
// rest of the suite must run without one.
func node(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found in PATH; install Node.js 18+ to compare Parse with JavaScript")
	}
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		t.Skipf("%s --version failed (%v); cannot compare Parse with JavaScript", path, err)
	}
	version := strings.TrimSpace(string(out))
	major, _, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	if n, err := strconv.Atoi(major); err != nil || n < 18 {
		t.Skipf("node %s is older than 18 (no fetch Response); cannot compare Parse with JavaScript", version)
	}
	return path
}

// runNode runs node with args, feeds it in as JSON and decodes its JSON
// output into out.
func runNode(t *testing.T, in, out any, args ...string) {
	t.Helper()
	input, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node(t), args...)
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	output, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %v: %v\n%s", args, err, stderr.Bytes())
	}
	if err := json.Unmarshal(output, out); err != nil {
		t.Fatalf("node %v printed %q: %v", args, output, err)
	}
}

// TestParityWithJavaScript runs the reference's request.json() and
// validate() in Node on every table body and several hundred generated ones,
// and requires Parse to accept exactly the same bodies and the receipt to
// print the same symbol, side and quantity, byte for byte.
func TestParityWithJavaScript(t *testing.T) {
	bodies, deviations := parityCorpus()
	encoded := make([]string, len(bodies))
	for i, b := range bodies {
		encoded[i] = base64.StdEncoding.EncodeToString(b)
	}
	var js []*string
	runNode(t, encoded, &js, "testdata/parity.mjs")
	if got, want := len(js), len(bodies); got != want {
		t.Fatalf("node returned %d results, want %d", got, want)
	}

	failures, accepted, beyondSafe := 0, 0, 0
	for i, body := range bodies {
		o, err := order.Parse(body)
		if err != nil && js[i] != nil && jsQuantity(t, *js[i]) > order.MaxQuantity {
			// The one deliberate difference: JavaScript rounds a quantity
			// beyond 2^53 - 1, which Parse refuses instead.
			beyondSafe++
			continue
		}
		if why := deviations[i]; why != "" {
			// Parse rejects these on purpose; make sure that is a real
			// difference and not a case that proves nothing.
			if err == nil || js[i] == nil {
				t.Errorf("body %q: Parse error %v, JavaScript %v; want Parse to reject what JavaScript accepts (%s)", body, err, orNull(deref(js[i])), why)
			}
			continue
		}
		var got string
		if err == nil {
			got = members(o)
		}
		want := deref(js[i])
		if got != want {
			t.Errorf("body %q:\n Go %s (err %v)\n JS %s", body, orNull(got), err, orNull(want))
			failures++
		} else if err == nil {
			accepted++
			sum := sha256.Sum256([]byte(want))
			if got, want := o.Fingerprint(), hex.EncodeToString(sum[:]); got != want {
				t.Errorf("body %q: Fingerprint = %s, want sha256 of JavaScript's %s = %s", body, got, *js[i], want)
				failures++
			}
		}
		if failures >= 20 {
			t.Fatal("too many differences; stopping")
		}
	}
	if beyondSafe == 0 {
		t.Error("no body had a quantity beyond order.MaxQuantity: the one deliberate difference went unchecked")
	}
	t.Logf("compared %d bodies with Node; %d accepted by both, %d refused by Parse for a quantity beyond 2^53 - 1", len(bodies), accepted, beyondSafe)
}

// jsQuantity reads the quantity of what validate() returned.
func jsQuantity(t *testing.T, members string) float64 {
	t.Helper()
	var v struct{ Quantity float64 }
	if err := json.Unmarshal([]byte(members), &v); err != nil {
		t.Fatalf("JavaScript's result %s: %v", members, err)
	}
	return v.Quantity
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func orNull(s string) string {
	if s == "" {
		return "null (rejected)"
	}
	return s
}

// members cuts {"symbol":…,"side":…,"quantity":…} out of the receipt JSON,
// so that what is compared is what clients receive.
func members(o order.Order) string {
	receipt := string(order.Receipt{Status: order.StatusAccepted, Order: o, AcceptedAt: time.Unix(0, 0)}.JSON())
	const before, after = `"status":"accepted",`, `,"acceptedAt":`
	start := strings.Index(receipt, before) + len(before)
	end := strings.LastIndex(receipt, after)
	return "{" + receipt[start:end] + "}"
}

// parityCorpus returns the table bodies and generated ones, and which of
// them are deliberate deviations. The generator is seeded, so a failure
// reproduces.
func parityCorpus() (bodies [][]byte, deviations []string) {
	add := func(body []byte, deviation string) {
		bodies = append(bodies, body)
		deviations = append(deviations, deviation)
	}
	for _, tc := range parseCases {
		add([]byte(tc.body), tc.deviation)
	}
	for _, q := range quantityLiterals() {
		add([]byte(withQuantity(q)), "")
	}

	rng := rand.New(rand.NewPCG(20240102, 1))
	const alphabet = "{}[]\":,\\/ubfnrt0123456789eE+-.ABCDEFabcdef' \t\n\r" +
		"\x00\x01\x1f\x7f\x80\xbf\xc0\xc3\xe2\x82\xed\xa0\xf0\x9f\xf4\x90\xff\xef\xbb"
	bases := []string{
		`{"symbol":"AAPL","side":"buy","quantity":10}`,
		`{"quantity":1e21,"symbol":"\u0041\ud83d\ude00","side":"sell","x":[1,{"y":null}]}`,
		"\xef\xbb\xbf{ \"symbol\" : \"é\\ud800\" , \"side\":\"buy\" ,\"quantity\":9007199254740993 }",
		`{"symbol":"A","symbol":"B","side":"b\u0075y","quantity":1.0e2,"n":[true,false,-0.5e-3]}`,
	}
	for range 400 {
		b := []byte(bases[rng.IntN(len(bases))])
		for range 1 + rng.IntN(3) {
			b = mutate(rng, b, alphabet)
		}
		add(b, "")
	}
	for range 100 {
		b := make([]byte, rng.IntN(16))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		add(b, "")
	}
	pieces := []string{
		"A", " ", "<", "&", ">", "\x7f", "é", "😀", "\u2028", "\xef\xbb\xbf", "\t",
		`\u0000`, `\u001f`, `\ud800`, `\udc00`, `\ud83d\ude00`, `\uD83D`, `\uDE00`, `\u2028`,
		`\"`, `\\`, `\/`, `\n`, `\b`,
		"\xe2\x82", "\xf0\x9f\x98", "\xed\xa0\x80", "\xc0\xaf", "\xff", "\xf4\x90\x80\x80",
	}
	for range 200 {
		var s strings.Builder
		for range rng.IntN(5) {
			s.WriteString(pieces[rng.IntN(len(pieces))])
		}
		add([]byte(withSymbol(`"`+s.String()+`"`)), "")
	}
	return bodies, deviations
}

// mutate applies one random edit to b: delete, insert, replace, copy a
// slice elsewhere, or truncate.
func mutate(rng *rand.Rand, b []byte, alphabet string) []byte {
	if len(b) == 0 {
		return []byte{alphabet[rng.IntN(len(alphabet))]}
	}
	i := rng.IntN(len(b))
	switch rng.IntN(5) {
	case 0:
		return append(b[:i:i], b[i+1:]...)
	case 1:
		return append(append(b[:i:i], alphabet[rng.IntN(len(alphabet))]), b[i:]...)
	case 2:
		b = bytes.Clone(b)
		b[i] = alphabet[rng.IntN(len(alphabet))]
		return b
	case 3:
		j := i + rng.IntN(len(b)-i)
		k := rng.IntN(len(b) + 1)
		return append(append(bytes.Clone(b[:k]), b[i:j+1]...), b[k:]...)
	default:
		return b[:i]
	}
}

// quantityLiterals are number literals where float parsing or validation is
// easy to get subtly wrong: the 2**53 region, the fixed/exponential switch at
// 1e21, halfway cases, overflow and underflow, and very long literals.
func quantityLiterals() []string {
	lits := []string{
		"1e20", "1e21", "1e22", "999999999999999999999", "100000000000000000000",
		"999999999999999934463", "999999999999999934464", "999999999999999934465",
		"1.7976931348623158e308", "1.797693134862315808e308", "1e308", "1e309",
		"2.4703282292062328e-324", "2.4703282292062327e-324", "4.9e-324", "1e-324",
		"0e0", "-0.0", "0.0e5", "100e-2", "1000000000000000000000e-21", "5.0000000000000001",
		"9007199254740993" + strings.Repeat("0", 1000),
		"9007199254740993" + strings.Repeat("0", 1000) + "1",
		"1" + strings.Repeat("0", 400),
		"0." + strings.Repeat("0", 400) + "1",
		"1e99999999999999999999", "1e-99999999999999999999",
	}
	for k := int64(-3); k <= 3; k++ {
		lits = append(lits, strconv.FormatInt(1<<53+k, 10), strconv.FormatInt(1<<54+k, 10), strconv.FormatInt(1<<63-4+k, 10))
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for range 60 {
		// 20 to 23 digit integers straddle 1e21.
		d := []byte{byte('1' + rng.IntN(9))}
		for range 19 + rng.IntN(4) {
			d = append(d, byte('0'+rng.IntN(10)))
		}
		lits = append(lits, string(d))
	}
	for range 80 {
		// d.ddd…e±x across the whole exponent range.
		var s strings.Builder
		if rng.IntN(4) == 0 {
			s.WriteByte('-')
		}
		s.WriteByte(byte('1' + rng.IntN(9)))
		if n := rng.IntN(20); n > 0 {
			s.WriteByte('.')
			for range n {
				s.WriteByte(byte('0' + rng.IntN(10)))
			}
		}
		s.WriteString([]string{"e", "E", "e+", "e-"}[rng.IntN(4)])
		s.WriteString(strconv.Itoa(rng.IntN(330)))
		lits = append(lits, s.String())
	}
	return lits
}

// TestFormatNumberMatchesJavaScript compares FormatNumber with String(x)
// in Node on numbers the order table never reaches: fractions, tiny and
// huge magnitudes, and random bit patterns.
func TestFormatNumberMatchesJavaScript(t *testing.T) {
	var xs []float64
	for e := -323; e <= 308; e++ {
		x := math.Pow(10, float64(e))
		xs = append(xs, x, math.Nextafter(x, 0), math.Nextafter(x, math.Inf(1)), -x)
	}
	rng := rand.New(rand.NewPCG(3, 5))
	for range 2000 {
		if x := math.Float64frombits(rng.Uint64()); !math.IsNaN(x) && !math.IsInf(x, 0) {
			xs = append(xs, x)
		}
		xs = append(xs, float64(rng.IntN(1_000_000))/1000, rng.Float64())
	}
	xs = append(xs, 0, math.MaxFloat64, math.SmallestNonzeroFloat64, 1<<53+2, 123456789012345680000)
	lits := make([]string, len(xs))
	for i, x := range xs {
		lits[i] = strconv.FormatFloat(x, 'g', -1, 64) // exact: JavaScript's Number() reads it back to x
	}
	const script = `const c = []; for await (const b of process.stdin) c.push(b);
process.stdout.write(JSON.stringify(JSON.parse(Buffer.concat(c)).map(s => String(Number(s)))));`
	var js []string
	runNode(t, lits, &js, "--input-type=module", "-e", script)
	if got, want := len(js), len(xs); got != want {
		t.Fatalf("node returned %d results, want %d", got, want)
	}
	for i, x := range xs {
		if got, want := jsjson.FormatNumber(x), js[i]; got != want {
			t.Errorf("FormatNumber(%s) = %q, want %q", lits[i], got, want)
		}
	}
}
