package rapidflags

import (
	"flag"
	"testing"
)

func TestDefaultYieldsToTheCommandLineAndTheEnvironment(t *testing.T) {
	fs := flag.CommandLine
	defer func() { flag.CommandLine = fs }()
	for _, c := range []struct {
		name, args, env, want string
	}{
		{"nothing set: the default", "", "", "7"},
		{"the command line wins", "-rapid.seed=9", "", "9"},
		{"the environment wins", "", "5", "1"}, // rapid reads RAPID_SEED itself: the flag keeps its own default
	} {
		t.Run(c.name, func(t *testing.T) {
			flag.CommandLine = flag.NewFlagSet("test", flag.ContinueOnError)
			seed := flag.String("rapid.seed", "1", "")
			var args []string
			if c.args != "" {
				args = []string{c.args}
			}
			if err := flag.CommandLine.Parse(args); err != nil {
				t.Fatal(err)
			}
			if c.env != "" {
				t.Setenv("RAPID_SEED", c.env)
			}
			Default("seed", "7")
			if *seed != c.want {
				t.Errorf("rapid.seed = %s, want %s", *seed, c.want)
			}
		})
	}
}
