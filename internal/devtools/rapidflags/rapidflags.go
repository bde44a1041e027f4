// Package rapidflags sets a default for one of rapid's flags in a test
// binary's TestMain, as the simulator and intake's property test do to
// make go test's histories the same every run.
package rapidflags

import (
	"flag"
	"os"
	"strings"
)

// Default sets the flag rapid.<name> to value unless the command line set
// it or the environment sets RAPID_<NAME>, which rapid reads instead. Call
// it after flag.Parse.
func Default(name, value string) {
	if _, ok := os.LookupEnv("RAPID_" + strings.ToUpper(name)); ok {
		return
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid."+name })
	if !set {
		flag.Set("rapid."+name, value)
	}
}
