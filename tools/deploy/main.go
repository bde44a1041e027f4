//go:build !js

// Command deploy deploys an environment of wrangler.toml (make deploy):
// it checks it first where Cloudflare would refuse it (package deploy's
// dry run: wrangler warnings, placeholders, settings the Worker cannot run
// with), then runs `wrangler deploy` and what provisioning leaves out,
// the dead-letter queue's 14-day retention. Every step leaves an
// environment that has it as it is, so running it twice changes nothing.
//
//	go run ./tools/deploy -env ENV [-secrets FILE] [-dry]
//
// -dry checks and prints the commands without running them.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/edge-orders/edge-orders/internal/deploy"
)

func main() {
	env := flag.String("env", "", `the environment of wrangler.toml: "" (KV mode), ledger or ledger-front`)
	secrets := flag.String("secrets", "", "a file of NAME=value lines: secrets this deploy sets (wrangler's --secrets-file)")
	dry := flag.Bool("dry", false, "check, and print the commands instead of running them")
	flag.Parse()
	if err := run(*env, *secrets, *dry); err != nil {
		fmt.Fprintln(os.Stderr, "deploy:", err)
		os.Exit(1)
	}
}

func run(env, secrets string, dry bool) error {
	s, _, err := deploy.DryRun(deploy.Options{Dir: ".", Env: env, SecretsFile: secrets})
	if err != nil {
		return err
	}
	fmt.Printf("deploy: --env %q checked: no warnings, no placeholders, settings the Worker runs with\n", env)
	bin, err := filepath.Abs(filepath.Join("node_modules", ".bin"))
	if err != nil {
		return err
	}
	for _, args := range deploy.Commands(env, s, secrets) {
		fmt.Println("wrangler " + quote(args))
		if dry {
			continue
		}
		cmd := exec.Command(filepath.Join(bin, "wrangler"), args...)
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("wrangler %s: %w", quote(args), err)
		}
	}
	return nil
}

// quote joins args as a shell would read them back.
func quote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = a
		if a == "" || strings.ContainsAny(a, " \"'$\\") {
			q[i] = strconv.Quote(a)
		}
	}
	return strings.Join(q, " ")
}
