//go:build !js

package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// settings decodes an environment as wrangler's reader prints it.
func settings(t *testing.T, raw string) Settings {
	t.Helper()
	var s Settings
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatal(err)
	}
	s.Raw = []byte(raw)
	return s
}

const shipped = `{"name":"edge-orders","workers_dev":true,"preview_urls":false,
	"vars":{"OPEN_ACCESS":"false","LOG_LEVEL":"orders"},"secrets":{"required":["API_TOKENS"]},
	"kv_namespaces":[{"binding":"ORDERS"}],
	"queues":{"consumers":[{"queue":"edge-orders-settle","dead_letter_queue":"edge-orders-settle-dlq"},{"queue":"edge-orders-settle-dlq"}]}}`

// TestCheckFindsWhatCloudflareOrTheWorkerWouldRefuse: each case changes
// the shipped settings in one way that would fail on deploy day.
func TestCheckFindsWhatCloudflareOrTheWorkerWouldRefuse(t *testing.T) {
	tests := []struct {
		name, old, new string
		secrets        map[string]string
		want           string
	}{
		{"the shipped settings pass", "", "", nil, ""},
		{"good secrets pass", "", "", map[string]string{"API_TOKENS": "desk-a:0123456789abcdef"}, ""},
		{"an all-zero id", `{"binding":"ORDERS"}`, `{"binding":"ORDERS","id":"00000000000000000000000000000000"}`, nil,
			`kv_namespaces[0].id = "00000000000000000000000000000000"`},
		{"a name to fill in", `{"binding":"ORDERS"}`, `{"binding":"ORDERS","id":"<your namespace id>"}`, nil, `kv_namespaces[0].id = "<your namespace id>"`},
		{"workers_dev left to wrangler", `"workers_dev":true,`, "", nil, "workers_dev and preview_urls must be set"},
		{"OPEN_ACCESS=1", `"OPEN_ACCESS":"false"`, `"OPEN_ACCESS":"1"`, nil, `OPEN_ACCESS: "1" is neither`},
		{"a var that is no string", `"LOG_LEVEL":"orders"`, `"LOG_LEVEL":1`, nil, "LOG_LEVEL: a var the Worker reads is a string"},
		{"open with required tokens", `"OPEN_ACCESS":"false"`, `"OPEN_ACCESS":"true"`, nil, `OPEN_ACCESS is "true", but [secrets] requires API_TOKENS`},
		{"closed without required tokens", `"secrets":{"required":["API_TOKENS"]},`, "", nil, "would take orders from no one"},
		{"a bad token list", "", "", map[string]string{"API_TOKENS": "desk-a=0123456789abcdef"}, "API_TOKENS: entry 1"},
		{"a dead-letter queue renamed without DEAD_LETTER_QUEUE", `edge-orders-settle-dlq"},{"queue":"edge-orders-settle-dlq"}`,
			`orders-dlq"},{"queue":"orders-dlq"}`, nil, `consumes the dead-letter queue "orders-dlq", but DEAD_LETTER_QUEUE names "edge-orders-settle-dlq"`},
		// The later "vars" member is the one decoded.
		{"a dead-letter queue renamed with DEAD_LETTER_QUEUE", `edge-orders-settle-dlq"},{"queue":"edge-orders-settle-dlq"}]}`,
			`orders-dlq"},{"queue":"orders-dlq"}]},"vars":{"OPEN_ACCESS":"false","LOG_LEVEL":"orders","DEAD_LETTER_QUEUE":"orders-dlq"}`, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := settings(t, strings.Replace(shipped, tc.old, tc.new, 1))
			err := Check(s, tc.secrets)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Check = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Check = %v, want an error with %q", err, tc.want)
			case err != nil && strings.Contains(err.Error(), "0123456789abcdef"):
				t.Errorf("Check = %v, which quotes a secret", err)
			}
		})
	}
}

// TestCommandsGiveEachDeadLetterQueueItsRetention: KV mode's deploy is
// followed by one update of its dead-letter queue; an environment without
// queues gets the deploy only; SECRETS goes to wrangler's --secrets-file.
func TestCommandsGiveEachDeadLetterQueueItsRetention(t *testing.T) {
	got := Commands("", settings(t, shipped), "s.env")
	want := [][]string{
		{"deploy", "--env", "", "--secrets-file", "s.env"},
		{"queues", "update", "edge-orders-settle-dlq", "--message-retention-period-secs", "1209600"},
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("Commands = %q, want %q", got, want)
	}
	if got := Commands("ledger", settings(t, `{"name":"edge-orders-ledger"}`), ""); len(got) != 1 || !slices.Equal(got[0], []string{"deploy", "--env", "ledger"}) {
		t.Errorf("Commands for the ledger = %q, want the deploy only", got)
	}
}

// TestWarningsAreFoundInColour: wrangler prints a warning in colour even
// with NO_COLOR, its details on the indented lines under it.
func TestWarningsAreFoundInColour(t *testing.T) {
	out := "\n ⛅️ wrangler 4.164.0\n\x1b[33m▲ \x1b[43;33m[\x1b[43;30mWARNING\x1b[43;33m]\x1b[0m \x1b[1mProcessing wrangler.toml configuration:\x1b[0m\n\n    - a var is missing\n\n[custom build] Running: ./build.sh\n"
	got := Warnings(out)
	if len(got) != 1 || got[0] != "▲ [WARNING] Processing wrangler.toml configuration: - a var is missing" {
		t.Errorf("Warnings = %q", got)
	}
	if got := Warnings("Total Upload: 3834.91 KiB\n--dry-run: exiting now.\n"); len(got) != 0 {
		t.Errorf("Warnings of a clean run = %q, want none", got)
	}
}

// TestReadSecretsReadsDotenvLines, and refuses a line that is not one
// without quoting it.
func TestReadSecretsReadsDotenvLines(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.env")
	os.WriteFile(good, []byte("# tokens\nAPI_TOKENS=\"desk-a:0123456789abcdef\"\n\nOMS_TOKEN = abc\n"), 0o600)
	got, err := ReadSecrets(good)
	if err != nil || got["API_TOKENS"] != "desk-a:0123456789abcdef" || got["OMS_TOKEN"] != "abc" || len(got) != 2 {
		t.Errorf("ReadSecrets = %q, %v", got, err)
	}
	bad := filepath.Join(dir, "bad.env")
	os.WriteFile(bad, []byte("desk-a:0123456789abcdef\n"), 0o600)
	if _, err := ReadSecrets(bad); err == nil || strings.Contains(err.Error(), "0123456789abcdef") {
		t.Errorf("ReadSecrets of a bad line = %v, want an error that quotes nothing", err)
	}
}
