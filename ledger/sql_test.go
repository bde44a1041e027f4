package ledger

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestListingQueryReadsWhatItLists runs the object's own schema and
// listing query, as its source writes them, in Debian's SQLite (sqlite3):
// among 3,000 stored receipts and 3 open keys, the listing's virtual
// machine steps, which grow with every row SQLite visits, stay a few per
// key listed. Over the primary key alone it visits every receipt. The
// runtime's own counter (rowsRead, TestClientListingReadsWhatItLists)
// reports the rows returned either way, so this is where the index shows.
// It skips without sqlite3 unless EDGE_ORDERS_REQUIRE_SQLITE3 is set.
func TestListingQueryReadsWhatItLists(t *testing.T) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		if os.Getenv("EDGE_ORDERS_REQUIRE_SQLITE3") != "" {
			t.Fatal("sqlite3 is not installed (apt-get install sqlite3)")
		}
		t.Skip("sqlite3 is not installed (apt-get install sqlite3)")
	}
	object := source(t, "object_js.go")
	admin := source(t, "admin_js.go")
	// As create runs them: the table, the columns added since, the rest.
	var schema, rest []string
	for _, m := range regexp.MustCompile("(?s)t\\.query\\(`(CREATE [^`]*)`\\)").FindAllStringSubmatch(object, -1) {
		if strings.HasPrefix(m[1], "CREATE TABLE IF NOT EXISTS entries ") {
			schema = append(schema, m[1]+";")
		} else {
			rest = append(rest, m[1]+";")
		}
	}
	for _, m := range regexp.MustCompile(`\{"(\w+)", "([^"]+)"\}`).FindAllStringSubmatch(object, -1) {
		schema = append(schema, "ALTER TABLE entries ADD COLUMN "+m[1]+" "+m[2]+";")
	}
	schema = append(schema, rest...)
	columns := regexp.MustCompile("(?s)const rowColumns = `([^`]*)`").FindStringSubmatch(object)
	scan := regexp.MustCompile("(?s)func \\(t sqlTable\\) scan.*?t\\.query\\(`([^`]*)`\\+rowColumns\\+`([^`]*)`").FindStringSubmatch(admin)
	if len(schema) < 3 || columns == nil || scan == nil {
		t.Fatalf("found %d schema statements, columns %v, scan %v: the source moved?", len(schema), columns != nil, scan != nil)
	}
	query := strings.Replace(scan[1]+columns[1]+scan[2], "key > ?", "key > ''", 1)
	query = strings.Replace(query, "LIMIT ?", "LIMIT "+strconv.Itoa(scanBatch), 1)

	const receipts, open = 3000, 3
	setup := strings.Join(schema, "\n") + `
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ` + strconv.Itoa(receipts-1) + `)
INSERT INTO entries (key, token, fingerprint, receipt, expires) SELECT 'desk:done-' || printf('%05d', i), 't', 'f', '{}', 9e15 FROM n;
INSERT INTO entries (key, token, fingerprint, receipt, expires, sent, order_id) VALUES
  ('desk:open-1', 't', 'f', NULL, 9e15, 1, 'a'), ('desk:open-2', 't', 'f', NULL, 9e15, 1, 'b'), ('desk:open-3', 't', 'f', NULL, 9e15, 1, 'c');
`
	steps := func(t *testing.T, setup, query string) (rows, steps int) {
		t.Helper()
		db := filepath.Join(t.TempDir(), "ledger.db")
		cmd := exec.Command("sqlite3", db)
		cmd.Stdin = strings.NewReader(setup + ".stats on\n" + query + ";\n")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("sqlite3: %v\n%s", err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			switch {
			case strings.HasPrefix(line, "desk:"):
				rows++
			case strings.HasPrefix(line, "Virtual Machine Steps:"):
				steps, _ = strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "Virtual Machine Steps:")))
			}
		}
		return rows, steps
	}
	rows, indexed := steps(t, setup, query)
	if rows != open {
		t.Fatalf("the listing query returned %d rows, want the %d open ones", rows, open)
	}
	// The same rows over the primary key alone, for scale.
	noIndex := regexp.MustCompile(`CREATE INDEX IF NOT EXISTS entries_open[^;]*;`).ReplaceAllString(setup, "")
	_, scanned := steps(t, noIndex, strings.Replace(query, "INDEXED BY entries_open", "", 1))
	t.Logf("listing %d open keys among %d receipts: %d VM steps through entries_open (%.1f a key listed), %d over the primary key",
		open, receipts, indexed, float64(indexed)/open, scanned)
	// A row listed costs some 25 steps (15 columns read); one visited
	// and skipped, a few.
	if per := indexed / open; per > 40 || scanned < receipts {
		t.Errorf("%d VM steps a key listed (over the primary key %d): the listing visits rows it does not list", per, scanned)
	}
}

// source is a file of this package's source.
func source(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
