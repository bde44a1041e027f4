//go:build js && wasm

package ledger

import (
	"context"
	"errors"
	"strconv"
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
	workers.ExportAlarm(Class, func(ctx context.Context, state workers.State, env workers.Env) error {
		return alarm(ctx, state, env, newSettler)
	})
}

// object returns the Object over state's SQLite storage.
func object(state workers.State) *Object {
	return &Object{rows: sqlTable{state}, now: time.Now, setAlarm: state.SetAlarm}
}

// alarm runs the object's alarm: the sweep when it is due, then the
// settler for every key due, each as a request would (a synchronous claim
// step, the gateway call, a synchronous commit step), all at once; then the
// next alarm (RunAlarm: a minute later while the Worker is misconfigured
// and cannot settle). The keys run on the Worker's kept goroutines (settleAll);
// the alarm fails if one panicked.
func alarm(ctx context.Context, state workers.State, env workers.Env, newSettler func(workers.Env, intake.Store) *intake.Service) error {
	o := object(state)
	var settle func([]intake.Key) error // nil: nothing can settle
	if settler := newSettler(env, NewLocal(o)); settler != nil {
		settle = func(keys []intake.Key) error {
			return settleAll(keys, workers.Go, func(key intake.Key) {
				settler.Settle(ctx, key) // a key left due is tried again
			})
		}
	}
	return o.RunAlarm(settle)
}

func serveObject(state workers.State, method string, arg []byte) ([]byte, error) {
	o := object(state)
	if method == "open" {
		o.rows.(sqlTable).create()
		return nil, nil
	}
	return call(o, method, arg)
}

// call runs method with its JSON argument and returns its JSON answer.
func call(o *Object, method string, arg []byte) ([]byte, error) {
	switch method {
	case "claim":
		key, c, err := decodeClaim(arg)
		if err != nil {
			return nil, err
		}
		rec, err := o.Claim(key, c)
		if err != nil {
			return nil, err
		}
		return encodeRecord(rec), nil
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
		if err := o.Release(key, c); err != nil {
			return nil, err
		}
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
	if res, ok, err := serveAdmin(o, method, arg); ok {
		return res, err
	}
	return nil, errors.New("ledger: no method " + strconv.Quote(method))
}

// sqlTable is a table in the object's SQLite database. One row per key,
// in a WITHOUT ROWID table so that a write touches one b-tree, not a table
// and an index. Times are Unix milliseconds. Each query is one synchronous
// call through the bridge; an SQL error panics, and the object's call
// throws it.
type sqlTable struct{ state workers.State }

// query runs q with params and returns its rows.
func (t sqlTable) query(q string, params ...any) workers.Rows {
	rows, err := t.state.Exec(q, params...)
	if err != nil {
		panic(err)
	}
	return rows
}

// create makes the tables, and adds to an entries table made by an older
// version the columns it lacks: their defaults read as the old rows meant.
func (t sqlTable) create() {
	t.query(`CREATE TABLE IF NOT EXISTS entries (
		key TEXT PRIMARY KEY, token TEXT NOT NULL, fingerprint TEXT NOT NULL,
		receipt TEXT, expires INTEGER NOT NULL) WITHOUT ROWID`)
	columns := t.query(`PRAGMA table_info(entries)`)
	have := map[string]bool{}
	for i := range columns.Values {
		have[columns.Value(i, "name").Str] = true
	}
	for _, c := range addedColumns {
		if !have[c.name] {
			t.query(`ALTER TABLE entries ADD COLUMN ` + c.name + ` ` + c.decl)
		}
	}
	// The settler's outbox: the keys due, found without a scan.
	t.query(`CREATE INDEX IF NOT EXISTS entries_due ON entries (due) WHERE due > 0`)
	// The operator's listing: the rows without an outcome, in key order,
	// so that a listing reads what it lists, not every receipt.
	t.query(`CREATE INDEX IF NOT EXISTS entries_open ON entries (key) WHERE receipt IS NULL`)
	// Purges' tombstones (admin.go), each kept for its window; the sweep's
	// cursor; the alarm's time. One call for the three: each statement is
	// a crossing of the bridge on every new object.
	t.query(`CREATE TABLE IF NOT EXISTS purges (
		key TEXT PRIMARY KEY, token TEXT NOT NULL, record TEXT NOT NULL, until INTEGER NOT NULL) WITHOUT ROWID;
	CREATE TABLE IF NOT EXISTS sweep (
		id INTEGER PRIMARY KEY CHECK (id = 1), next INTEGER NOT NULL);
	CREATE TABLE IF NOT EXISTS alarm (
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
	{"tentative", "INTEGER NOT NULL DEFAULT 0"},
	{"sent", "INTEGER NOT NULL DEFAULT 0"},
	// The key's phase as the row's last write left it, by name
	// (intake.Phase); '' in rows written before it was.
	{"phase", "TEXT NOT NULL DEFAULT ''"},
}

// phaseName is p as the phase column holds it: empty for none.
func phaseName(p intake.Phase) string {
	if p == intake.PhaseAbsent {
		return ""
	}
	return p.String()
}

// millis reads a time column; 0 is the zero time.
func millis(v workers.SQLValue) time.Time {
	if v.Null || v.Num == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(v.Num))
}

// rowColumns are the columns a row is read from (rowAt).
const rowColumns = `client, token, fingerprint, order_id, accepted_at, order_json, receipt, rejected,
		lease_until, attempts, due, unresolved, tentative, sent, expires, phase`

func (t sqlTable) get(key string) (row, bool) {
	rows := t.query(`SELECT `+rowColumns+` FROM entries WHERE key = ?`, key)
	if len(rows.Values) == 0 {
		return row{}, false
	}
	return rowAt(rows, 0, key), true
}

// rowAt reads the i-th of rows, selected as rowColumns, as key's row.
func rowAt(rows workers.Rows, i int, key string) row {
	v := func(name string) workers.SQLValue { return rows.Value(i, name) }
	r := row{key: key, client: v("client").Str, token: v("token").Str, fingerprint: v("fingerprint").Str,
		orderID: v("order_id").Str, acceptedAt: millis(v("accepted_at")), rejected: v("rejected").Num != 0,
		leaseUntil: millis(v("lease_until")), attempts: int(v("attempts").Num), due: millis(v("due")),
		giveUp: intake.GiveUpOf(v("unresolved").Num != 0, millis(v("due"))), tentative: v("tentative").Num != 0, sent: v("sent").Num != 0,
		expires: millis(v("expires"))}
	r.phase, _ = intake.ParsePhase(v("phase").Str)
	if o, err := order.Parse([]byte(v("order_json").Str)); err == nil {
		r.order, r.hasOrder = o, true
	}
	if receipt := v("receipt"); !receipt.Null {
		r.receipt = []byte(receipt.Str)
	}
	return r
}

func (t sqlTable) put(r row) {
	var receipt any // NULL for a claim
	if r.receipt != nil {
		receipt = string(r.receipt)
	}
	ms := func(at time.Time) int64 {
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
	t.query(`INSERT OR REPLACE INTO entries
		(key, client, token, fingerprint, order_id, accepted_at, order_json, receipt, rejected, lease_until,
		 attempts, due, unresolved, tentative, sent, expires, phase) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.key, r.client, r.token, r.fingerprint, r.orderID, ms(r.acceptedAt), orderJSON, receipt, flag(r.rejected),
		ms(r.leaseUntil), r.attempts, ms(r.due), flag(r.giveUp.Unresolved()), flag(r.tentative), flag(r.sent), r.expires.UnixMilli(),
		phaseName(r.phase))
}

// dueRows returns the due rows with their key and client only: all the
// settler needs to name them.
func (t sqlTable) dueRows(now time.Time, limit int) []row {
	rows := t.query(`SELECT key, client FROM entries WHERE due > 0 AND due <= ? AND expires > ? ORDER BY due LIMIT ?`,
		now.UnixMilli(), now.UnixMilli(), limit)
	due := make([]row, len(rows.Values))
	for i := range due {
		due[i] = row{key: rows.Value(i, "key").Str, client: rows.Value(i, "client").Str}
	}
	return due
}

func (t sqlTable) nextDue(now time.Time) time.Time {
	return t.first(`SELECT MIN(due) AS at FROM entries WHERE due > 0 AND expires > ?`, now.UnixMilli())
}

func (t sqlTable) alarm() time.Time {
	return t.first(`SELECT at FROM alarm WHERE id = 1`)
}

func (t sqlTable) setAlarm(at time.Time) {
	if at.IsZero() {
		t.query(`DELETE FROM alarm`)
		return
	}
	t.query(`INSERT OR REPLACE INTO alarm (id, at) VALUES (1, ?)`, at.UnixMilli())
}

// first returns the time in the column named at of query's first row;
// zero for none.
func (t sqlTable) first(query string, args ...any) time.Time {
	rows := t.query(query, args...)
	if len(rows.Values) == 0 {
		return time.Time{}
	}
	return millis(rows.Value(0, "at"))
}

func (t sqlTable) delete(key string) {
	t.query(`DELETE FROM entries WHERE key = ?`, key)
}

func (t sqlTable) deleteExpired(now time.Time) bool {
	t.query(`DELETE FROM entries WHERE expires <= ?`, now.UnixMilli())
	t.query(`DELETE FROM purges WHERE until <= ?`, now.UnixMilli())
	return len(t.query(`SELECT 1 AS one FROM entries LIMIT 1`).Values) > 0 ||
		len(t.query(`SELECT 1 AS one FROM purges LIMIT 1`).Values) > 0
}

func (t sqlTable) purged(key string) (purged, bool) {
	rows := t.query(`SELECT token, record, until FROM purges WHERE key = ?`, key)
	if len(rows.Values) == 0 {
		return purged{}, false
	}
	rec, err := decodeRecord([]byte(rows.Value(0, "record").Str))
	if err != nil {
		return purged{}, false
	}
	return purged{key: key, token: rows.Value(0, "token").Str, rec: rec, until: millis(rows.Value(0, "until"))}, true
}

func (t sqlTable) putPurged(p purged) {
	t.query(`INSERT OR REPLACE INTO purges (key, token, record, until) VALUES (?, ?, ?, ?)`,
		p.key, p.token, string(encodeRecord(p.rec)), p.until.UnixMilli())
}

func (t sqlTable) nextSweep() time.Time {
	return t.first(`SELECT next AS at FROM sweep WHERE id = 1`)
}

func (t sqlTable) count() int {
	return int(t.query(`SELECT COUNT(*) AS n FROM entries`).Value(0, "n").Num)
}

func (t sqlTable) setNextSweep(at time.Time) {
	if at.IsZero() {
		t.query(`DELETE FROM sweep`)
		return
	}
	t.query(`INSERT OR REPLACE INTO sweep (id, next) VALUES (1, ?)`, at.UnixMilli())
}
