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
	defer workers.Release(storage, rows.sql)
	if method == "open" {
		rows.create()
		return js.Undefined(), nil
	}
	o := &Object{rows: rows, now: time.Now, setAlarm: func(at time.Time) {
		// The returned promise needs no await: the output gate holds the
		// reply until the alarm is stored.
		workers.Release(storage.Call("setAlarm", at.UnixMilli()))
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
		return workers.Object("committed", err == nil, "lost", err != nil), nil
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
		nextSweep := int64(0) // none
		if !next.IsZero() {
			nextSweep = next.UnixMilli()
		}
		return workers.Object("rows", rows, "nextSweep", nextSweep), nil
	}
	return js.Undefined(), errors.New("ledger: no method " + strconv.Quote(method))
}

// recordToJS and recordFromJS carry an intake.Record over RPC as
// {state, receipt, rejected, fingerprint, expires, orderId, acceptedAt}.
func recordToJS(r intake.Record) js.Value {
	fields := []any{"state", int(r.State), "fingerprint", r.Fingerprint}
	if r.Body != nil {
		fields = append(fields, "receipt", string(r.Body), "rejected", r.Rejected)
	}
	if !r.Expires.IsZero() {
		fields = append(fields, "expires", r.Expires.UnixMilli())
	}
	if r.OrderID != "" {
		fields = append(fields, "orderId", r.OrderID, "acceptedAt", r.AcceptedAt.UnixMilli())
	}
	return workers.Object(fields...)
}

// errNotRecord is an object's answer recordFromJS cannot read.
var errNotRecord = errors.New("ledger: an answer that is not a record")

// recordFromJS refuses an answer it cannot read, rather than guess: a
// Stored record must carry its receipt.
func recordFromJS(v js.Value) (intake.Record, error) {
	if v.Type() != js.TypeObject || v.Get("state").Type() != js.TypeNumber {
		return intake.Record{}, errNotRecord
	}
	fingerprint, ok := workers.StringField(v, "fingerprint")
	if !ok {
		return intake.Record{}, errNotRecord
	}
	r := intake.Record{State: intake.State(v.Get("state").Int()), Fingerprint: fingerprint}
	if receipt, ok := workers.StringField(v, "receipt"); ok {
		r.Body = []byte(receipt)
		r.Rejected = v.Get("rejected").Truthy()
	}
	if expires := v.Get("expires"); expires.Type() == js.TypeNumber {
		r.Expires = time.UnixMilli(int64(expires.Float()))
	}
	if id, ok := workers.StringField(v, "orderId"); ok {
		r.OrderID = id
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

// run executes query, with params bound to its placeholders, for its
// effect. An SQL error panics, and the object's call throws it.
func (t sqlTable) run(query string, params ...any) {
	workers.Release(t.exec(query, params...))
}

// rows executes query and returns its rows, an array the caller releases.
func (t sqlTable) rows(query string, params ...any) js.Value {
	cursor := t.exec(query, params...)
	defer workers.Release(cursor)
	return cursor.Call("toArray")
}

func (t sqlTable) exec(query string, params ...any) js.Value {
	cursor, err := workers.Call(t.sql, "exec", append([]any{query}, params...)...)
	if err != nil {
		panic(err)
	}
	return cursor
}

// create makes the tables, and adds to an entries table made by an older
// version the columns it lacks: their defaults read as the old rows meant.
func (t sqlTable) create() {
	t.run(`CREATE TABLE IF NOT EXISTS entries (
		key TEXT PRIMARY KEY, token TEXT NOT NULL, fingerprint TEXT NOT NULL,
		receipt TEXT, expires INTEGER NOT NULL) WITHOUT ROWID`)
	columns := t.rows(`PRAGMA table_info(entries)`)
	defer workers.Release(columns)
	have := map[string]bool{}
	for i := range columns.Length() {
		column := columns.Index(i)
		name, _ := workers.StringField(column, "name")
		workers.Release(column)
		have[name] = true
	}
	for _, c := range addedColumns {
		if !have[c.name] {
			t.run(`ALTER TABLE entries ADD COLUMN ` + c.name + ` ` + c.decl)
		}
	}
	t.run(`CREATE TABLE IF NOT EXISTS sweep (
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
	rows := t.rows(`SELECT token, fingerprint, order_id, accepted_at, receipt, rejected, lease_until, expires
		FROM entries WHERE key = ?`, key)
	defer workers.Release(rows)
	if rows.Length() == 0 {
		return row{}, false
	}
	v := rows.Index(0)
	defer workers.Release(v)
	ms := func(name string) time.Time {
		if n := int64(v.Get(name).Float()); n != 0 {
			return time.UnixMilli(n)
		}
		return time.Time{}
	}
	text := func(name string) string {
		s, _ := workers.StringField(v, name)
		return s
	}
	r := row{key: key, token: text("token"), fingerprint: text("fingerprint"),
		orderID: text("order_id"), acceptedAt: ms("accepted_at"), rejected: v.Get("rejected").Int() != 0,
		leaseUntil: ms("lease_until"), expires: ms("expires")}
	if receipt, ok := workers.StringField(v, "receipt"); ok {
		r.receipt = []byte(receipt)
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
	t.run(`INSERT OR REPLACE INTO entries
		(key, token, fingerprint, order_id, accepted_at, receipt, rejected, lease_until, expires) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.key, r.token, r.fingerprint, r.orderID, millis(r.acceptedAt), receipt, rejected, millis(r.leaseUntil), r.expires.UnixMilli())
}

func (t sqlTable) delete(key string) {
	t.run(`DELETE FROM entries WHERE key = ?`, key)
}

func (t sqlTable) deleteExpired(now time.Time) bool {
	t.run(`DELETE FROM entries WHERE expires <= ?`, now.UnixMilli())
	rows := t.rows(`SELECT 1 FROM entries LIMIT 1`)
	defer workers.Release(rows)
	return rows.Length() > 0
}

func (t sqlTable) nextSweep() time.Time {
	rows := t.rows(`SELECT next FROM sweep WHERE id = 1`)
	defer workers.Release(rows)
	if rows.Length() == 0 {
		return time.Time{}
	}
	first := rows.Index(0)
	defer workers.Release(first)
	return time.UnixMilli(int64(first.Get("next").Float()))
}

func (t sqlTable) count() int {
	rows := t.rows(`SELECT COUNT(*) AS n FROM entries`)
	defer workers.Release(rows)
	first := rows.Index(0)
	defer workers.Release(first)
	return first.Get("n").Int()
}

func (t sqlTable) setNextSweep(at time.Time) {
	if at.IsZero() {
		t.run(`DELETE FROM sweep`)
		return
	}
	t.run(`INSERT OR REPLACE INTO sweep (id, next) VALUES (1, ?)`, at.UnixMilli())
}
