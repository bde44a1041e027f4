//go:build !js

package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// snapshot copies the repository at root into a new temporary folder and
// links its node_modules there, and returns the folder.
//
// The benchmark serves the Workers from a snapshot because wrangler dev
// rebuilds and restarts the Go Worker whenever a watched file changes: served
// from the repository, every save by someone working on it would land in the
// middle of a measured round. Left out: .git, node_modules (linked instead),
// build outputs, wrangler state, bench results, and .dev.vars and .env files,
// which could set API_TOKENS and make the Go Worker answer 401 where the
// reference answers.
func snapshot(root string) (dir string, err error) {
	root, err = filepath.Abs(root)
	if err != nil {
		return "", err
	}
	dir, err = os.MkdirTemp("", "edge-orders-bench-src-")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted while we copy, as editors do with their temporary files
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		if skipInSnapshot(rel, d) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
			return os.Mkdir(filepath.Join(dir, rel), 0o755)
		case d.Type().IsRegular():
			if err := copyFile(path, filepath.Join(dir, rel)); !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		return nil // symlinks and other special files are not sources
	})
	if err != nil {
		return "", err
	}
	return dir, os.Symlink(filepath.Join(root, "node_modules"), filepath.Join(dir, "node_modules"))
}

// skipInSnapshot reports whether the file or folder at rel (relative to the
// repository root) stays out of a snapshot.
func skipInSnapshot(rel string, d fs.DirEntry) bool {
	switch filepath.ToSlash(rel) {
	case ".git", "node_modules", "build", ".wrangler", "bench/results":
		return true
	}
	name := d.Name()
	return name == ".wrangler" || strings.HasPrefix(name, ".dev.vars") || strings.HasPrefix(name, ".env")
}

// copyFile copies the regular file src to dst, keeping its permissions (build.sh
// must stay executable).
func copyFile(src, dst string) error {
	info, err := os.Stat(src)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, info.Mode().Perm())
}
