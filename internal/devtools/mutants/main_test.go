package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestEveryPlantFindsItsLine: a plant whose text its file no longer holds
// once is stale, and make mutants fails on it after twenty minutes; make
// test says so at once, beside the change that moved the line.
func TestEveryPlantFindsItsLine(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	all := append([]mutant(nil), mutants...)
	for _, p := range simOnly {
		all = append(all, p.mutant)
	}
	for _, m := range all {
		src, err := os.ReadFile(filepath.Join(root, m.file))
		if err != nil {
			t.Errorf("%s: %v", m.name, err)
			continue
		}
		if n := bytes.Count(src, []byte(m.old)); n != 1 {
			t.Errorf("stale plant %q: its text is in %s %d times, want once", m.name, m.file, n)
		}
	}
}
