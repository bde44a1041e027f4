//go:build js && wasm

package ledger

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"syscall/js"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/order"
	"github.com/edge-orders/edge-orders/workers"
)

// Class is the Durable Object class name, as worker.mjs exports it and
// wrangler.toml binds it.
const Class = "Ledger"

// Export serves the Ledger class's methods (worker.mjs forwards each call)
// with an Object over the calling object's SQLite storage. Each method is
// synchronous from start to end, with no await: the object runs it whole,
// and its writes commit together. Each takes one JSON argument and
// returns one JSON result (wire.go). The object's alarm settles its due
// keys with the intake.Service that newSettler builds over the object's
// own rows, with the Worker's gateway (nil when the Worker is
// misconfigured: nothing is settled).
func Export(newSettler func(env workers.Env, store intake.Store) *intake.Service) {
	workers.ExportObject(Class, serveObject)
	workers.ExportAlarm(Class, func(ctx context.Context, state js.Value, env workers.Env) error {
		return alarm(ctx, state, env, newSettler)
	})
}

// settleBatch bounds the keys one alarm settles; more are left due, and
// the next alarm comes a second later.
const settleBatch = 32

// object returns the Object over state's SQLite storage.
func object(state js.Value) (*Object, func()) {
	storage := state.Get("storage")
	rows := sqlTable{sql: storage.Get("sql")}
	o := &Object{rows: rows, now: time.Now, setAlarm: func(at time.Time) {
		// The returned promise needs no await: the output gate holds the
		// reply until the alarm is stored.
		workers.Release(storage.Call("setAlarm", at.UnixMilli()))
	}}
	return o, func() { workers.Release(storage, rows.sql) }
}

// alarm runs the object's alarm: the sweep when it is due, then the
// settler for every key due, each as a request would (a synchronous claim
// step, the gateway call, a synchronous commit step), all at once; then the
// next alarm.
func alarm(ctx context.Context, state js.Value, env workers.Env, newSettler func(workers.Env, intake.Store) *intake.Service) error {
	o, done := object(state)
	defer done()
	keys := o.Alarm(settleBatch)
	if settler := newSettler(env, NewLocal(o)); settler != nil && len(keys) > 0 {
		var wg sync.WaitGroup
		for _, key := range keys {
			wg.Add(1)
			go func() {
				defer wg.Done()
				settler.Settle(ctx, key) // a key left due is tried again
			}()
		}
		wg.Wait()
	}
	o.AlarmDone(intake.FirstSettleDelay)
	return nil
}

func serveObject(state js.Value, method string, args []js.Value) (js.Value, error) {
	o, done := object(state)
	defer done()
	if method == "open" {
		o.rows.(sqlTable).create()
		return js.Undefined(), nil
	}
	var arg []byte
	if len(args) > 0 && args[0].Type() == js.TypeString {
		arg = []byte(args[0].String())
	}
	answer, err := call(o, method, arg)
	if err != nil {
		return js.Undefined(), err
	}
	return js.ValueOf(string(answer)), nil
}

// call runs method with its JSON argument and returns its JSON answer.
func call(o *Object, method string, arg []byte) ([]byte, error) {
	switch method {
	case "claim":
		key, c, err := decodeClaim(arg)
		if err != nil {
			return nil, err
		}
		return encodeRecord(o.Claim(key, c)), nil
	case "commit":
		key, c, r, err := decodeCommit(arg)
		if err != nil {
			return nil, err
		}
		return encodeCommitted(o.Commit(key, c, r)), nil
	case "release":
		key, c, err := decodeClaim(arg)
		if err != nil {
			return nil, err
		}
		o.Release(key, c)
		return []byte("{}"), nil
	case "lookup":
		key, err := decodeKey(arg)
		if err != nil {
			return nil, err
		}
		return encodeRecord(o.Lookup(key)), nil
	case "sweep":
		o.Sweep()
		return []byte("{}"), nil
	case "stats":
		rows, next, alarm := o.Stats()
		var d doc
		d.member("rows")
		d.b = strconv.AppendInt(d.b, int64(rows), 10)
		d.time("nextSweep", next)
		d.time("alarm", alarm)
		return d.bytes(), nil
	}
	return nil, errors.New("ledger: no method " + strconv.Quote(method))
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
	// The settler's outbox: the keys due, found without a scan.
	t.run(`CREATE INDEX IF NOT EXISTS entries_due ON entries (due) WHERE due > 0`)
	t.run(`CREATE TABLE IF NOT EXISTS sweep (
		id INTEGER PRIMARY KEY CHECK (id = 1), next INTEGER NOT NULL)`)
	t.run(`CREATE TABLE IF NOT EXISTS alarm (
		id INTEGER PRIMARY KEY CHECK (id = 1), at INTEGER NOT NULL)`)
}

// addedColumns came after the first version of the entries table.
var addedColumns = []struct{ name, decl string }{
	{"order_id", "TEXT NOT NULL DEFAULT ''"},
	{"accepted_at", "INTEGER NOT NULL DEFAULT 0"},
	{"rejected", "INTEGER NOT NULL DEFAULT 0"},
	{"lease_until", "INTEGER NOT NULL DEFAULT 0"},
	{"client", "TEXT NOT NULL DEFAULT ''"},
	{"order_json", "TEXT NOT NULL DEFAULT ''"},
	{"attempts", "INTEGER NOT NULL DEFAULT 0"},
	{"due", "INTEGER NOT NULL DEFAULT 0"},
	{"unresolved", "INTEGER NOT NULL DEFAULT 0"},
}

func (t sqlTable) get(key string) (row, bool) {
	rows := t.rows(`SELECT client, token, fingerprint, order_id, accepted_at, order_json, receipt, rejected,
		lease_until, attempts, due, unresolved, expires FROM entries WHERE key = ?`, key)
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
	r := row{key: key, client: text("client"), token: text("token"), fingerprint: text("fingerprint"),
		orderID: text("order_id"), acceptedAt: ms("accepted_at"), rejected: v.Get("rejected").Int() != 0,
		leaseUntil: ms("lease_until"), attempts: v.Get("attempts").Int(), due: ms("due"),
		unresolved: v.Get("unresolved").Int() != 0, expires: ms("expires")}
	if o, err := order.Parse([]byte(text("order_json"))); err == nil {
		r.order, r.hasOrder = o, true
	}
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
	flag := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	var orderJSON string
	if r.hasOrder {
		orderJSON = string(r.order.JSON())
	}
	t.run(`INSERT OR REPLACE INTO entries
		(key, client, token, fingerprint, order_id, accepted_at, order_json, receipt, rejected, lease_until,
		 attempts, due, unresolved, expires) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.key, r.client, r.token, r.fingerprint, r.orderID, millis(r.acceptedAt), orderJSON, receipt, flag(r.rejected),
		millis(r.leaseUntil), r.attempts, millis(r.due), flag(r.unresolved), r.expires.UnixMilli())
}

// dueRows returns the due rows with their key and client only: all the
// settler needs to name them.
func (t sqlTable) dueRows(now time.Time, limit int) []row {
	rows := t.rows(`SELECT key, client FROM entries WHERE due > 0 AND due <= ? ORDER BY due LIMIT ?`, now.UnixMilli(), limit)
	defer workers.Release(rows)
	due := make([]row, rows.Length())
	for i := range due {
		v := rows.Index(i)
		key, _ := workers.StringField(v, "key")
		client, _ := workers.StringField(v, "client")
		workers.Release(v)
		due[i] = row{key: key, client: client}
	}
	return due
}

func (t sqlTable) nextDue() time.Time {
	return t.first(`SELECT MIN(due) AS at FROM entries WHERE due > 0`)
}

func (t sqlTable) alarm() time.Time {
	return t.first(`SELECT at FROM alarm WHERE id = 1`)
}

func (t sqlTable) setAlarm(at time.Time) {
	if at.IsZero() {
		t.run(`DELETE FROM alarm`)
		return
	}
	t.run(`INSERT OR REPLACE INTO alarm (id, at) VALUES (1, ?)`, at.UnixMilli())
}

// first returns the time in the first column, named at, of query's first
// row; zero for none.
func (t sqlTable) first(query string) time.Time {
	rows := t.rows(query)
	defer workers.Release(rows)
	if rows.Length() == 0 {
		return time.Time{}
	}
	v := rows.Index(0)
	defer workers.Release(v)
	at := v.Get("at")
	if at.Type() != js.TypeNumber || at.Float() == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(at.Float()))
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
	return t.first(`SELECT next AS at FROM sweep WHERE id = 1`)
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
