//go:build !js

// Package deploy checks an environment of wrangler.toml where Cloudflare
// would refuse it, before wrangler uploads anything, and lists the
// commands that deploy it with what wrangler's provisioning leaves out.
// tools/deploy (make deploy) runs it, and so do make test's dry runs.
package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
)

// DeadLetterRetention is the dead-letter queue's retention, in seconds:
// 14 days, the most Queues keeps a message (a created queue keeps it 4).
const DeadLetterRetention = 14 * 24 * 60 * 60

// Settings is one environment of a wrangler config as wrangler resolves
// it, with the fields the check reads.
type Settings struct {
	Name        string         `json:"name"`
	Vars        map[string]any `json:"vars"`
	WorkersDev  *bool          `json:"workers_dev"`
	PreviewURLs *bool          `json:"preview_urls"`
	Secrets     *struct {
		Required []string `json:"required"`
	} `json:"secrets"`
	Queues struct {
		Consumers []struct {
			Queue           string `json:"queue"`
			DeadLetterQueue string `json:"dead_letter_queue"`
		} `json:"consumers"`
	} `json:"queues"`
	// Raw is the whole resolved environment, searched for placeholders.
	Raw json.RawMessage `json:"-"`
}

// readConfigScript prints wrangler's resolved config of the environment
// named by its argument ("" for the top level) as one JSON line after a
// marker, through wrangler's own reader: what a deploy would use, with its
// diagnostics on the console as a deploy prints them.
const readConfigScript = `const w = require("wrangler");
const c = w.unstable_readConfig({config: process.argv[1], env: process.argv[2] || undefined});
console.log("\n` + marker + `" + JSON.stringify(c));`

const marker = "DEPLOY-CHECK-CONFIG "

// ReadSettings reads environment env ("" for the top level) of the wrangler
// config file (relative to dir, where node_modules is) through wrangler,
// and returns it with everything wrangler printed while reading it.
func ReadSettings(dir, configFile, env string) (Settings, string, error) {
	// wrangler's command, with node_modules/.bin first on its PATH, run
	// as the Node.js installed there.
	cmd, err := wranglerdev.Command(dir)
	if err != nil {
		return Settings{}, "", err
	}
	cmd.Path = filepath.Join(cmd.Dir, "node_modules", ".bin", "node")
	cmd.Args = []string{"node", "-e", readConfigScript, configFile, env}
	out, err := cmd.CombinedOutput()
	i := bytes.LastIndex(out, []byte(marker))
	if err != nil || i < 0 {
		return Settings{}, string(out), fmt.Errorf("wrangler could not read %s: %v\n%s", configFile, err, out)
	}
	line, _, _ := bytes.Cut(out[i+len(marker):], []byte("\n"))
	var s Settings
	if err := json.Unmarshal(line, &s); err != nil {
		return Settings{}, string(out), err
	}
	s.Raw = slices.Clone(line)
	return s, string(out[:i]), nil
}

// Warnings returns wrangler's warnings in out, the output of a wrangler
// command: each "[WARNING]" line with the indented lines under it.
func Warnings(out string) []string {
	var warnings []string
	lines := strings.Split(ansi.ReplaceAllString(out, ""), "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.Contains(lines[i], "[WARNING]") {
			continue
		}
		w := strings.TrimSpace(lines[i])
		for i+1 < len(lines) && (strings.TrimSpace(lines[i+1]) == "" || strings.HasPrefix(lines[i+1], " ")) {
			i++
			if l := strings.TrimSpace(lines[i]); l != "" {
				w += " " + l
			}
		}
		warnings = append(warnings, w)
	}
	return warnings
}

// ansi matches a terminal colour sequence, which wrangler prints around
// its warnings even with NO_COLOR set.
var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// placeholder matches a value no Cloudflare resource has: an all-zero id,
// or a <name> to fill in.
var placeholder = regexp.MustCompile(`^(0{8,}|<[^>]*>)$`)

// Check returns the first reason, in one line, why Cloudflare would refuse
// s, or why the Worker would not run on it, or nil. secrets holds the
// values of secrets the deploy sets (make deploy's SECRETS file), checked
// with the vars by package config; a secret not given is checked only for
// being required where the Worker needs it.
func Check(s Settings, secrets map[string]string) error {
	if p := findPlaceholder(s.Raw); p != "" {
		return errors.New("a placeholder Cloudflare would refuse: " + p + ": name a real resource, or leave the id out for wrangler to provision")
	}
	if s.WorkersDev == nil || s.PreviewURLs == nil {
		return errors.New("workers_dev and preview_urls must be set, not left to wrangler's defaults")
	}
	vars := map[string]string{}
	for name, v := range s.Vars {
		str, ok := v.(string)
		if !ok {
			return errors.New(name + ": a var the Worker reads is a string, in quotes")
		}
		vars[name] = str
	}
	var required []string
	if s.Secrets != nil {
		required = s.Secrets.Required
	}
	lookup := func(name string) (string, bool) {
		if v, ok := secrets[name]; ok {
			return v, true
		}
		v, ok := vars[name]
		return v, ok
	}
	cfg, err := config.Load(lookup)
	if err != nil {
		return err
	}
	if q := consumedDeadLetterQueue(s); q != "" && q != cfg.DeadLetterQueue {
		return errors.New("the Worker consumes the dead-letter queue " + strconv.Quote(q) + ", but " + config.DeadLetterQueueVar + " names " +
			strconv.Quote(cfg.DeadLetterQueue) + ": it would take each letter for a settle message and drop it; set " + config.DeadLetterQueueVar + " to the queue's name")
	}
	open := strings.TrimSpace(vars[config.OpenAccessVar]) == "true"
	tokens := slices.Contains(required, config.TokensVar)
	switch {
	case open && tokens:
		return errors.New(config.OpenAccessVar + ` is "true", but [secrets] requires ` + config.TokensVar + ": a Worker with tokens is never open; remove one")
	case !open && !tokens:
		return errors.New(config.OpenAccessVar + ` is not "true", and [secrets] does not require ` + config.TokensVar + ": the Worker would take orders from no one")
	}
	return nil
}

// consumedDeadLetterQueue is a queue s consumes that is also a consumer's
// dead-letter queue, or "": the one the Worker must tell apart from its
// settle queue, by name (config.DeadLetterQueueVar).
func consumedDeadLetterQueue(s Settings) string {
	for _, c := range s.Queues.Consumers {
		for _, d := range s.Queues.Consumers {
			if d.DeadLetterQueue != "" && d.DeadLetterQueue == c.Queue {
				return c.Queue
			}
		}
	}
	return ""
}

// findPlaceholder returns the first string in the JSON document raw that
// is a placeholder, with its place, or "".
func findPlaceholder(raw []byte) string {
	var doc any
	if json.Unmarshal(raw, &doc) != nil {
		return ""
	}
	var walk func(path string, v any) string
	walk = func(path string, v any) string {
		switch v := v.(type) {
		case string:
			if placeholder.MatchString(v) {
				return path + " = " + strconv.Quote(v)
			}
		case []any:
			for i, e := range v {
				if p := walk(path+"["+strconv.Itoa(i)+"]", e); p != "" {
					return p
				}
			}
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				if p := walk(strings.TrimPrefix(path+"."+k, "."), v[k]); p != "" {
					return p
				}
			}
		}
		return ""
	}
	return walk("", doc)
}

// Commands are the wrangler commands that deploy environment env of s,
// in order: the deploy (with the secrets file, if any), then what
// provisioning does not do, each of which leaves things as they are when
// run again: every dead-letter queue it consumes gets DeadLetterRetention.
func Commands(env string, s Settings, secretsFile string) [][]string {
	deploy := []string{"deploy", "--env", env}
	if secretsFile != "" {
		deploy = append(deploy, "--secrets-file", secretsFile)
	}
	cmds := [][]string{deploy}
	var dlqs []string
	for _, c := range s.Queues.Consumers {
		if c.DeadLetterQueue != "" && !slices.Contains(dlqs, c.DeadLetterQueue) {
			dlqs = append(dlqs, c.DeadLetterQueue)
		}
	}
	for _, q := range dlqs {
		cmds = append(cmds, []string{"queues", "update", q, "--message-retention-period-secs", strconv.Itoa(DeadLetterRetention)})
	}
	return cmds
}

// ReadSecrets reads a secrets file as wrangler's --secrets-file takes it
// in its dotenv form: NAME=value lines, # comments, values maybe quoted.
func ReadSecrets(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	secrets := map[string]string{}
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			// Never quote the line: it may hold a secret.
			return nil, fmt.Errorf("%s:%d: not a NAME=value line", filepath.Base(path), n+1)
		}
		value = strings.TrimSpace(value)
		if len(value) >= 2 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
			value = value[1 : len(value)-1]
		}
		secrets[strings.TrimSpace(name)] = value
	}
	return secrets, nil
}

// Options name what DryRun checks.
type Options struct {
	// Dir holds node_modules; Config is the wrangler config, relative to
	// Dir (default wrangler.toml); Env its environment, "" the top level.
	Dir, Config, Env string
	// SecretsFile, if set, holds the secrets the deploy sets (NAME=value).
	SecretsFile string
	// Environ is added to wrangler's environment.
	Environ []string
}

// DryRun checks environment opts.Env as a deploy would meet it, offline:
// wrangler's reading of the config, then Check, then `wrangler deploy
// --dry-run`, which builds, bundles and validates. Any wrangler warning
// fails it, as does every reason Check finds, in one line naming the
// environment. It returns the environment's settings and wrangler's output.
func DryRun(opts Options) (Settings, string, error) {
	if opts.Config == "" {
		opts.Config = "wrangler.toml"
	}
	where := "--env " + strconv.Quote(opts.Env)
	s, printed, err := ReadSettings(opts.Dir, opts.Config, opts.Env)
	if err != nil {
		return s, printed, fmt.Errorf("%s: %w", where, err)
	}
	if w := Warnings(printed); len(w) > 0 {
		return s, printed, fmt.Errorf("%s: wrangler warns: %s", where, strings.Join(w, "; "))
	}
	var secrets map[string]string
	if opts.SecretsFile != "" {
		if secrets, err = ReadSecrets(opts.SecretsFile); err != nil {
			return s, printed, fmt.Errorf("%s: %w", where, err)
		}
	}
	if err := Check(s, secrets); err != nil {
		return s, printed, fmt.Errorf("%s: %w", where, err)
	}
	args := []string{"deploy", "--dry-run", "--config", opts.Config, "--env", opts.Env}
	if opts.SecretsFile != "" {
		args = append(args, "--secrets-file", opts.SecretsFile)
	}
	cmd, err := wranglerdev.Command(opts.Dir, args...)
	if err != nil {
		return s, "", err
	}
	cmd.Env = append(cmd.Env, opts.Environ...)
	b, err := cmd.CombinedOutput()
	out := string(b)
	if err != nil || !strings.Contains(out, "--dry-run: exiting now.") {
		return s, out, fmt.Errorf("%s: wrangler deploy --dry-run failed: %v\n%s", where, err, out)
	}
	if w := Warnings(out); len(w) > 0 {
		return s, out, fmt.Errorf("%s: wrangler warns: %s", where, strings.Join(w, "; "))
	}
	return s, out, nil
}
