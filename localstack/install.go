package localstack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// postgresBinDir is where Debian's postgresql-15 package puts the server
// binaries (they are not on PATH).
const postgresBinDir = "/usr/lib/postgresql/15/bin"

// debianPackage names a Debian package and the file that proves it is installed.
type debianPackage struct {
	name  string
	proof string
}

func requiredPackages() []debianPackage {
	return []debianPackage{
		{name: "redis-server", proof: "/usr/bin/redis-server"},
		{name: "postgresql-15", proof: filepath.Join(postgresBinDir, "postgres")},
		{name: "maven", proof: "/usr/bin/mvn"},
	}
}

// EnsurePackages installs the Debian packages the stack needs when they are
// missing. Without root (or with install disabled) it returns an error that
// names the packages to install.
func EnsurePackages(ctx context.Context, install bool, progress io.Writer) error {
	var missing []string
	for _, p := range requiredPackages() {
		if _, err := os.Stat(p.proof); err != nil {
			missing = append(missing, p.name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if !install || os.Geteuid() != 0 {
		return fmt.Errorf("localstack: missing Debian packages: %s; install them with: sudo apt-get install -y %s",
			strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	fmt.Fprintf(progress, "installing Debian packages: %s\n", strings.Join(missing, " "))
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	update := exec.CommandContext(ctx, "apt-get", "update", "-q")
	update.Env = env
	if out, err := update.CombinedOutput(); err != nil {
		return fmt.Errorf("localstack: apt-get update: %w\n%s", err, lastLines(string(out), 20))
	}
	args := append([]string{"install", "-y", "-q", "--no-install-recommends"}, missing...)
	inst := exec.CommandContext(ctx, "apt-get", args...)
	inst.Env = env
	if out, err := inst.CombinedOutput(); err != nil {
		return fmt.Errorf("localstack: apt-get install %s: %w\n%s", strings.Join(missing, " "), err, lastLines(string(out), 20))
	}
	return nil
}

// FindJDK returns the home of a JDK with major version >= minMajor: $JAVA_HOME
// if it qualifies, else the newest one under /usr/lib/jvm.
func FindJDK(minMajor int) (string, error) {
	var candidates []string
	if home := os.Getenv("JAVA_HOME"); home != "" {
		candidates = append(candidates, home)
	}
	dirs, _ := filepath.Glob("/usr/lib/jvm/*")
	candidates = append(candidates, dirs...)
	best, bestMajor := "", 0
	var seen []string
	for _, home := range candidates {
		major, err := jdkMajor(home)
		if err != nil {
			continue
		}
		seen = append(seen, fmt.Sprintf("%s (%d)", home, major))
		if major >= minMajor && major > bestMajor {
			best, bestMajor = home, major
		}
	}
	if best == "" {
		return "", fmt.Errorf("localstack: no JDK %d or newer found in $JAVA_HOME or /usr/lib/jvm (found: %s); install one, e.g. apt-get install openjdk-21-jdk-headless, or set JAVA_HOME",
			minMajor, strings.Join(seen, ", "))
	}
	return best, nil
}

// jdkMajor reads JAVA_VERSION from a JDK's release file and checks javac exists.
func jdkMajor(home string) (int, error) {
	if _, err := os.Stat(filepath.Join(home, "bin", "javac")); err != nil {
		return 0, err
	}
	f, err := os.Open(filepath.Join(home, "release"))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "JAVA_VERSION="); ok {
			v = strings.Trim(v, `"`)
			v = strings.TrimPrefix(v, "1.") // 1.8 style
			major, _, _ := strings.Cut(v, ".")
			return strconv.Atoi(major)
		}
	}
	return 0, errors.New("no JAVA_VERSION in release file")
}

// LauncherJar is the launcher's jar, relative to its Maven module.
const launcherJar = "target/baedal-opensearch-launcher.jar"

// FindLauncherDir returns dir if set, else the nearest "opensearch" directory
// with a pom.xml in the working directory or its parents.
func FindLauncherDir(dir string) (string, error) {
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "pom.xml")); err != nil {
			return "", fmt.Errorf("localstack: launcher-dir %s: no pom.xml: %w", dir, err)
		}
		return filepath.Abs(dir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "opensearch", "pom.xml")); err == nil {
			return filepath.Join(d, "opensearch"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("localstack: no opensearch/pom.xml in %s or its parents; run from the baedal repository or pass --launcher-dir", wd)
		}
	}
}

// BuildLauncher builds the OpenSearch launcher with Maven when its jar is
// missing or older than its sources, and leaves in target/lib exactly the
// jars of that build (Maven keeps those of older builds, an older
// baedal-hot jar among them).
func BuildLauncher(ctx context.Context, launcherDir, jdkHome string, progress io.Writer) error {
	if err := buildLauncher(ctx, launcherDir, jdkHome, progress); err != nil {
		return err
	}
	removed, err := pruneLauncherLib(launcherDir)
	if len(removed) > 0 {
		fmt.Fprintf(progress, "removed jars of an older launcher build from %s: %s\n", filepath.Join(launcherDir, "target", "lib"), strings.Join(removed, ", "))
	}
	return err
}

func buildLauncher(ctx context.Context, launcherDir, jdkHome string, progress io.Writer) error {
	jar := filepath.Join(launcherDir, launcherJar)
	if upToDate(jar, launcherDir) {
		return nil
	}
	fmt.Fprintf(progress, "building the OpenSearch launcher with Maven (first run downloads ~60 MB of jars)\n")
	start := time.Now()
	cmd := exec.CommandContext(ctx, "mvn", "-q", "-B", "-DskipTests", "package")
	cmd.Dir = launcherDir
	cmd.Env = append(os.Environ(), "JAVA_HOME="+jdkHome)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("localstack: build OpenSearch launcher (mvn package in %s): %w\n%s", launcherDir, err, lastLines(string(out), 30))
	}
	if _, err := os.Stat(jar); err != nil {
		return fmt.Errorf("localstack: mvn package in %s did not produce %s", launcherDir, launcherJar)
	}
	fmt.Fprintf(progress, "built the OpenSearch launcher in %s\n", time.Since(start).Round(time.Second))
	return nil
}

// upToDate reports whether jar exists and is newer than pom.xml and src/.
func upToDate(jar, moduleDir string) bool {
	st, err := os.Stat(jar)
	if err != nil {
		return false
	}
	if _, err := os.Stat(filepath.Join(moduleDir, "target", "lib")); err != nil {
		return false
	}
	newer := false
	_ = filepath.WalkDir(moduleDir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && d.Name() == "target" {
			return filepath.SkipDir
		}
		if info, err := d.Info(); err == nil && !d.IsDir() && info.ModTime().After(st.ModTime()) {
			newer = true
		}
		return nil
	})
	return !newer
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
