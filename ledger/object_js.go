//go:build js && wasm

package ledger

import (
	"errors"
	"strconv"
	"syscall/js"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/workers"
)

// Class is the Durable Object class name, as worker.mjs exports it and
// wrangler.toml binds it.
const Class = "Ledger"

// Export serves the Ledger class's methods (worker.mjs forwards each call)
// with an Object over the calling object's SQLite storage. Each method is
// synchronous from start to end, with no await: the object runs it whole,
// and its writes commit together.
func Export() {
	workers.ExportObject(Class, serveObject)
}

func serveObject(state js.Value, method string, args []js.Value) (js.Value, error) {
	storage := state.Get("storage")
	rows := sqlTable{sql: storage.Get("sql")}
	if method == "open" {
		rows.create()
		return js.Undefined(), nil
	}
	o := &Object{rows: rows, now: time.Now, setAlarm: func(at time.Time) {
		// The returned promise needs no await: the output gate holds the
		// reply until the alarm is stored.
		storage.Call("setAlarm", at.UnixMilli())
	}}
	str := func(i int) string { return args[i].String() }
	ms := func(i int) time.Duration { return time.Duration(args[i].Int()) * time.Millisecond }
	at := func(i int) time.Time { return time.UnixMilli(int64(args[i].Float())) }
	switch method {
	case "claim":
		return recordToJS(o.Claim(str(0), intake.Claim{Token: str(1), Fingerprint: str(2), Lease: ms(3),
			OrderID: str(4), AcceptedAt: at(5), Keep: ms(6)})), nil
	case "commit":
		err := o.Commit(str(0), intake.Claim{Token: str(1)}, intake.Result{Body: []byte(str(2)), Fingerprint: str(3), TTL: ms(4),
			Rejected: args[5].Truthy()})
		res := workers.NewObject()
		res.Set("committed", err == nil)
		res.Set("lost", err != nil)
		return res, nil
	case "release":
		o.Release(str(0), intake.Claim{Token: str(1), Sent: args[2].Truthy(), OrderID: str(3), AcceptedAt: at(4)})
		return js.Undefined(), nil
	case "lookup":
		return recordToJS(o.Lookup(str(0))), nil
	case "sweep":
		o.Sweep()
		return js.Undefined(), nil
	case "stats":
		rows, next := o.Stats()
		res := workers.NewObject()
		res.Set("rows", rows)
		res.Set("nextSweep", 0) // none
		if !next.IsZero() {
			res.Set("nextSweep", next.UnixMilli())
		}
		return res, nil
	}
	return js.Undefined(), errors.New("ledger: no method " + strconv.Quote(method))
}

// recordToJS and recordFromJS carry an intake.Record over RPC as
// {state, receipt, rejected, fingerprint, expires, orderId, acceptedAt}.
func recordToJS(r intake.Record) js.Value {
	v := workers.NewObject()
	v.Set("state", int(r.State))
	if r.Body != nil {
		v.Set("receipt", string(r.Body))
		v.Set("rejected", r.Rejected)
	}
	v.Set("fingerprint", r.Fingerprint)
	if !r.Expires.IsZero() {
		v.Set("expires", r.Expires.UnixMilli())
	}
	if r.OrderID != "" {
		v.Set("orderId", r.OrderID)
		v.Set("acceptedAt", r.AcceptedAt.UnixMilli())
	}
	return v
}

// errNotRecord is an object's answer recordFromJS cannot read.
var errNotRecord = errors.New("ledger: an answer that is not a record")

// recordFromJS refuses an answer it cannot read, rather than guess: a
// Stored record must carry its receipt.
func recordFromJS(v js.Value) (intake.Record, error) {
	if v.Type() != js.TypeObject || v.Get("state").Type() != js.TypeNumber || v.Get("fingerprint").Type() != js.TypeString {
		return intake.Record{}, errNotRecord
	}
	r := intake.Record{State: intake.State(v.Get("state").Int()), Fingerprint: v.Get("fingerprint").String()}
	if receipt := v.Get("receipt"); receipt.Type() == js.TypeString {
		r.Body = []byte(receipt.String())
		r.Rejected = v.Get("rejected").Truthy()
	}
	if expires := v.Get("expires"); expires.Type() == js.TypeNumber {
		r.Expires = time.UnixMilli(int64(expires.Float()))
	}
	if id := v.Get("orderId"); id.Type() == js.TypeString {
		r.OrderID = id.String()
		r.AcceptedAt = time.UnixMilli(int64(v.Get("acceptedAt").Float()))
	}
	switch {
	case r.State > intake.Open, r.State == intake.Stored && r.Body == nil, r.State == intake.Open && r.OrderID == "":
		return intake.Record{}, errNotRecord
	}
	return r, nil
}

// sqlTable is a table in the object's SQLite database. One row per key,
// in a WITHOUT ROWID table so that a write touches one b-tree, not a table
// and an index. Times are Unix milliseconds.
type sqlTable struct{ sql js.Value }

// create makes the tables, and adds to an entries table made by an older
// version the columns it lacks: their defaults read as the old rows meant.
func (t sqlTable) create() {
	t.sql.Call("exec", `CREATE TABLE IF NOT EXISTS entries (
		key TEXT PRIMARY KEY, token TEXT NOT NULL, fingerprint TEXT NOT NULL,
		receipt TEXT, expires INTEGER NOT NULL) WITHOUT ROWID`)
	columns := t.sql.Call("exec", `PRAGMA table_info(entries)`).Call("toArray")
	have := map[string]bool{}
	for i := range columns.Length() {
		have[columns.Index(i).Get("name").String()] = true
	}
	for _, c := range addedColumns {
		if !have[c.name] {
			t.sql.Call("exec", `ALTER TABLE entries ADD COLUMN `+c.name+` `+c.decl)
		}
	}
	t.sql.Call("exec", `CREATE TABLE IF NOT EXISTS sweep (
		id INTEGER PRIMARY KEY CHECK (id = 1), next INTEGER NOT NULL)`)
}

// addedColumns came after the first version of the entries table.
var addedColumns = []struct{ name, decl string }{
	{"order_id", "TEXT NOT NULL DEFAULT ''"},
	{"accepted_at", "INTEGER NOT NULL DEFAULT 0"},
	{"rejected", "INTEGER NOT NULL DEFAULT 0"},
	{"lease_until", "INTEGER NOT NULL DEFAULT 0"},
}

func (t sqlTable) get(key string) (row, bool) {
	rows := t.sql.Call("exec", `SELECT token, fingerprint, order_id, accepted_at, receipt, rejected, lease_until, expires
		FROM entries WHERE key = ?`, key).Call("toArray")
	if rows.Length() == 0 {
		return row{}, false
	}
	v := rows.Index(0)
	ms := func(name string) time.Time {
		if n := int64(v.Get(name).Float()); n != 0 {
			return time.UnixMilli(n)
		}
		return time.Time{}
	}
	r := row{key: key, token: v.Get("token").String(), fingerprint: v.Get("fingerprint").String(),
		orderID: v.Get("order_id").String(), acceptedAt: ms("accepted_at"), rejected: v.Get("rejected").Int() != 0,
		leaseUntil: ms("lease_until"), expires: ms("expires")}
	if receipt := v.Get("receipt"); receipt.Type() == js.TypeString {
		r.receipt = []byte(receipt.String())
	}
	return r, true
}

func (t sqlTable) put(r row) {
	var receipt any // NULL for a claim
	if r.receipt != nil {
		receipt = string(r.receipt)
	}
	millis := func(at time.Time) int64 {
		if at.IsZero() {
			return 0
		}
		return at.UnixMilli()
	}
	rejected := 0
	if r.rejected {
		rejected = 1
	}
	t.sql.Call("exec", `INSERT OR REPLACE INTO entries
		(key, token, fingerprint, order_id, accepted_at, receipt, rejected, lease_until, expires) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.key, r.token, r.fingerprint, r.orderID, millis(r.acceptedAt), receipt, rejected, millis(r.leaseUntil), r.expires.UnixMilli())
}

func (t sqlTable) delete(key string) {
	t.sql.Call("exec", `DELETE FROM entries WHERE key = ?`, key)
}

func (t sqlTable) deleteExpired(now time.Time) bool {
	t.sql.Call("exec", `DELETE FROM entries WHERE expires <= ?`, now.UnixMilli())
	return t.sql.Call("exec", `SELECT 1 FROM entries LIMIT 1`).Call("toArray").Length() > 0
}

func (t sqlTable) nextSweep() time.Time {
	rows := t.sql.Call("exec", `SELECT next FROM sweep WHERE id = 1`).Call("toArray")
	if rows.Length() == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(rows.Index(0).Get("next").Float()))
}

func (t sqlTable) count() int {
	return t.sql.Call("exec", `SELECT COUNT(*) AS n FROM entries`).Call("one").Get("n").Int()
}

func (t sqlTable) setNextSweep(at time.Time) {
	if at.IsZero() {
		t.sql.Call("exec", `DELETE FROM sweep`)
		return
	}
	t.sql.Call("exec", `INSERT OR REPLACE INTO sweep (id, next) VALUES (1, ?)`, at.UnixMilli())
}
