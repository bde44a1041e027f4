// Command mutants plants bugs in the lifecycle, each reverting a fix in
// the project's history, and checks that the tests catch every one: the
// unit tests first, then the simulator. It never touches the tree: each
// mutant is a copy of one file handed to go test through -overlay. It
// exits 1 if a mutant survives, or if a mutant's text is no longer in
// its file (a refactor must keep the mutants current). make mutants runs
// it.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// mutant is one planted bug: old, found exactly once in file, replaced
// by new.
type mutant struct {
	name     string
	file     string
	old, new string
}

var mutants = []mutant{
	{"a replay ignores the order's fingerprint", "intake/submit.go",
		"\t\tif sub.fp != rec.Fingerprint {\n", "\t\tif false {\n"},
	{"a sent claim is released as unsent", "intake/submit.go",
		"\treceipt := order.Receipt{OrderID: claim.OrderID, Status: order.StatusAccepted, Order: claim.Order, AcceptedAt: claim.AcceptedAt}\n\tclaim.Sent = true\n",
		"\treceipt := order.Receipt{OrderID: claim.OrderID, Status: order.StatusAccepted, Order: claim.Order, AcceptedAt: claim.AcceptedAt}\n"},
	{"an order id minted per claim", "intake/submit.go",
		"claim.OrderID = sub.fp, sub.order, OrderIDFor(sub.key, sub.fp)",
		"claim.OrderID = sub.fp, sub.order, s.opts.NewID()"},
	{"no tentative claims in a migration", "intake/submit.go",
		"claim.Tentative = s.life.Tentative && s.fallback() && !claim.Sent",
		"claim.Tentative = false"},
	{"the opened set forgets at once", "intake/opened.go",
		"until: now.Add(openedTTL + time.Second - 1).Unix()",
		"until: now.Unix()"},
	{"a rate-limit refusal answered though its claim stays", "ledger/adapter.go",
		"rerr != nil && !c.Tentative {", "false && rerr != nil {"},
	{"ledger mode never adopts the keys KV mode left open", "intake/fallback.go",
		"func (s *Service) Adopt(ctx context.Context, key Key) (bool, error) {\n\tif !s.fallback() {",
		"func (s *Service) Adopt(ctx context.Context, key Key) (bool, error) {\n\tif true {"},
	{"a receipt kept shorter than its claim", "kv/store.go",
		"PutOptions{TTL: max(r.TTL, claimTTL(c, k.now()))}",
		"PutOptions{TTL: r.TTL}"},
	{"a held claim on an unresolved key decodes as open", "kv/store.go",
		"open:        str(stateMember) == openValue || str(stateMember) == unresolvedValue,",
		"open:        str(stateMember) == openValue || str(stateMember) == unresolvedValue || str(stateMember) == heldUnresolvedValue,"},
	{"the settler gives up without the check once reads have caught up", "intake/submit.go",
		"case by == bySettlerLastTime && !claim.Unresolved && s.life.ReadsLag > 0:",
		"case false:"},
	{"the settler ignores the receipt it stored a moment ago", "intake/settle.go",
		"\tif _, ok := s.receipts.get(cacheKey, now, false); ok {",
		"\tif _, ok := s.receipts.get(cacheKey, now, false); ok && false {"},
	{"a release refused by KV's write limit is not written again", "kv/store.go",
		"if errors.Is(err, ErrRateLimited) && k.sleep(ctx, writeEvery) == nil {",
		"if false {"},
	{"a settle message before its key is due settles it", "kv/store.go",
		"\treturn !k.now().Add(dueSlack).Before(rec.NextAttempt)\n",
		"\treturn true\n"},
	{"the sweep's cursor stays at the start of the page it stopped in", "kv/store.go",
		"return keys, k.saveWalkCursor(ctx, cursorKey, cursor, l.Name)",
		"return keys, k.saveWalkCursor(ctx, cursorKey, cursor, \"\")"},
	{"a purge during a migration leaves KV's claim", "intake/admin.go",
		"\tif final {\n",
		"\tif false {\n"},
	{"a failed claim write is not remembered in the opened set", "intake/submit.go",
		"\t\t\ts.opened.put(cacheKey, claim, now)\n\t\t}\n\t\treturn Outcome{}, storageUnavailable(err)",
		"\t\t}\n\t\treturn Outcome{}, storageUnavailable(err)"},
}

// unitPackages are what each mutant's unit tests run over.
var unitPackages = []string{"./intake/...", "./kv/...", "./ledger/...", "./settlequeue/...", "./app/..."}

func main() {
	histories := flag.Int("histories", 1000, "simulated histories a mode for a mutant the unit tests miss")
	only := flag.String("run", "", "only the mutants whose name contains this")
	flag.Parse()
	root, err := os.Getwd()
	if err != nil {
		fatal(err)
	}
	tmp, err := os.MkdirTemp("", "mutants")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(tmp)

	survived, stale := 0, 0
	start := time.Now()
	for i, m := range mutants {
		if !strings.Contains(m.name, *only) {
			continue
		}
		began := time.Now()
		overlay, err := plant(root, tmp, i, m)
		if err != nil {
			fmt.Printf("STALE     %-66s %v\n", m.name, err)
			stale++
			continue
		}
		caughtBy := ""
		if failed(overlay, nil, append([]string{"-count=1", "-timeout=90s"}, unitPackages...)...) {
			caughtBy = "unit tests"
		} else if failed(overlay, []string{"RAPID_CHECKS=" + fmt.Sprint(*histories)},
			"-count=1", "-timeout=10m", "-run", "TestSimulatedHistoriesKeepTheInvariants", "./sim", "-rapid.shrinktime=1s") {
			caughtBy = "the simulator"
		}
		took := time.Since(began).Round(time.Second)
		if caughtBy == "" {
			fmt.Printf("SURVIVED  %-66s %s\n", m.name, took)
			survived++
			continue
		}
		fmt.Printf("caught    %-66s by %s, %s\n", m.name, caughtBy, took)
	}
	fmt.Printf("%d mutants, %d survived, %d stale, in %s\n", len(mutants), survived, stale, time.Since(start).Round(time.Second))
	if survived+stale > 0 {
		os.Exit(1)
	}
}

// plant writes m's file, mutated, under tmp and an overlay that hands it
// to go test in place of the original; it returns the overlay's path.
func plant(root, tmp string, i int, m mutant) (string, error) {
	path := filepath.Join(root, m.file)
	src, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if n := bytes.Count(src, []byte(m.old)); n != 1 {
		return "", fmt.Errorf("its text is in %s %d times, want once", m.file, n)
	}
	mutated := filepath.Join(tmp, fmt.Sprintf("%d-%s", i, filepath.Base(m.file)))
	if err := os.WriteFile(mutated, bytes.Replace(src, []byte(m.old), []byte(m.new), 1), 0o644); err != nil {
		return "", err
	}
	doc, err := json.Marshal(map[string]map[string]string{"Replace": {path: mutated}})
	if err != nil {
		return "", err
	}
	overlay := filepath.Join(tmp, fmt.Sprintf("%d.json", i))
	return overlay, os.WriteFile(overlay, doc, 0o644)
}

// failed runs go test with the overlay and reports whether it failed. A
// mutant that does not compile counts as caught by no one: it is an
// error in the table.
func failed(overlay string, env []string, args ...string) bool {
	cmd := exec.Command("go", append([]string{"test", "-overlay=" + overlay}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		return false
	}
	if bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]")) {
		fatal(fmt.Errorf("a mutant does not build:\n%s", out))
	}
	return true
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "mutants:", err)
	os.Exit(2)
}
