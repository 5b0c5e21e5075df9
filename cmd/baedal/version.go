package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// buildVersion is what `baedal --version` prints.
type buildVersion struct {
	Version  string // module version, "(devel)" for a local build
	Revision string // vcs.revision, with "+dirty" when vcs.modified; "unknown" without
	Go       string
}

// readBuildVersion reads the version stamped by the Go toolchain: a binary
// built inside a git checkout carries vcs.revision and vcs.modified
// (go build and go install do; go run and go test do not).
func readBuildVersion(info *debug.BuildInfo, ok bool) buildVersion {
	v := buildVersion{Version: "(devel)", Revision: "unknown", Go: runtime.Version()}
	if !ok || info == nil {
		return v
	}
	if info.Main.Version != "" {
		v.Version = info.Main.Version
	}
	if info.GoVersion != "" {
		v.Go = info.GoVersion
	}
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && v.Revision != "unknown" {
		v.Revision += "+dirty"
	}
	return v
}

func (v buildVersion) write(w io.Writer) {
	fmt.Fprintf(w, "baedal %s\nrevision: %s\ngo: %s\n", v.Version, v.Revision, v.Go)
}

func runVersion(ctx context.Context, args []string) error {
	c := newCommand("version", "baedal version (or baedal --version)",
		"Print the version, the git revision the binary was built from (\"unknown\" when it was\nnot built from a git checkout, e.g. by go run) and the Go version.",
		"baedal version")
	if err := parse(c, args); err != nil || parseOnly(ctx) {
		return err
	}
	readBuildVersion(buildInfo()).write(os.Stdout)
	return nil
}

func buildInfo() (*debug.BuildInfo, bool) { return debug.ReadBuildInfo() }

// sourceRevision is the git revision for a run record: the one stamped in
// the binary, else (go run, or GOFLAGS=-buildvcs=false, stamps none) what
// git says of the working directory, else of the binary's directory (a
// bin/baedal run from elsewhere), else "unknown".
func sourceRevision(ctx context.Context) string {
	if v := readBuildVersion(buildInfo()); v.Revision != "unknown" {
		return v.Revision
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	dirs := []string{"."}
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(exe))
	}
	for _, dir := range dirs {
		out, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "HEAD").Output()
		if err != nil {
			continue
		}
		rev := strings.TrimSpace(string(out))
		if st, err := exec.CommandContext(ctx, "git", "-C", dir, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
			rev += "+dirty"
		}
		return rev
	}
	return "unknown"
}
