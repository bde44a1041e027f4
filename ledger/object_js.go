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
	switch method {
	case "claim":
		return recordToJS(o.Claim(str(0), intake.Claim{Token: str(1), Fingerprint: str(2), Lease: ms(3)})), nil
	case "commit":
		err := o.Commit(str(0), intake.Claim{Token: str(1)}, intake.Receipt{Body: []byte(str(2)), Fingerprint: str(3), TTL: ms(4)})
		res := workers.NewObject()
		res.Set("committed", err == nil)
		res.Set("lost", err != nil)
		return res, nil
	case "release":
		o.Release(str(0), intake.Claim{Token: str(1)})
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
// {state, receipt, fingerprint, expires}.
func recordToJS(r intake.Record) js.Value {
	v := workers.NewObject()
	v.Set("state", int(r.State))
	if r.Receipt != nil {
		v.Set("receipt", string(r.Receipt))
	}
	v.Set("fingerprint", r.Fingerprint)
	if !r.Expires.IsZero() {
		v.Set("expires", r.Expires.UnixMilli())
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
		r.Receipt = []byte(receipt.String())
	}
	if expires := v.Get("expires"); expires.Type() == js.TypeNumber {
		r.Expires = time.UnixMilli(int64(expires.Float()))
	}
	switch {
	case r.State > intake.Claimed, r.State == intake.Stored && r.Receipt == nil:
		return intake.Record{}, errNotRecord
	}
	return r, nil
}

// sqlTable is a table in the object's SQLite database. One row per key,
// in a WITHOUT ROWID table so that a write touches one b-tree, not a table
// and an index. Times are Unix milliseconds.
type sqlTable struct{ sql js.Value }

func (t sqlTable) create() {
	t.sql.Call("exec", `CREATE TABLE IF NOT EXISTS entries (
		key TEXT PRIMARY KEY, token TEXT NOT NULL, fingerprint TEXT NOT NULL,
		receipt TEXT, expires INTEGER NOT NULL) WITHOUT ROWID`)
	t.sql.Call("exec", `CREATE TABLE IF NOT EXISTS sweep (
		id INTEGER PRIMARY KEY CHECK (id = 1), next INTEGER NOT NULL)`)
}

func (t sqlTable) get(key string) (row, bool) {
	rows := t.sql.Call("exec", `SELECT token, fingerprint, receipt, expires FROM entries WHERE key = ?`, key).Call("toArray")
	if rows.Length() == 0 {
		return row{}, false
	}
	v := rows.Index(0)
	r := row{key: key, token: v.Get("token").String(), fingerprint: v.Get("fingerprint").String(),
		expires: time.UnixMilli(int64(v.Get("expires").Float()))}
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
	t.sql.Call("exec", `INSERT OR REPLACE INTO entries (key, token, fingerprint, receipt, expires) VALUES (?, ?, ?, ?, ?)`,
		r.key, r.token, r.fingerprint, receipt, r.expires.UnixMilli())
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
