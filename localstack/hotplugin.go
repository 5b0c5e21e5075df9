package localstack

import (
	"archive/zip"
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The launcher's classpath holds the jars of its last build: the launcher
// jar, whose manifest's Class-Path lists every runtime jar of that build
// (lib/NAME.jar), and target/lib, where Maven copies them. Maven never
// removes a jar it no longer copies, so a plugin version bump left the old
// baedal-hot jar beside the new one, and the JVM loaded whichever the
// directory listing gave first. BuildLauncher removes every jar of
// target/lib that the manifest does not list (pruneLauncherLib), and the
// launcher refuses to start when two jars hold one plugin class.

// launcherManifestJars returns the jars the launcher jar's manifest lists in
// its Class-Path, as file names under target/lib.
func launcherManifestJars(launcherDir string) ([]string, error) {
	jar := filepath.Join(launcherDir, launcherJar)
	zr, err := zip.OpenReader(jar)
	if err != nil {
		return nil, fmt.Errorf("localstack: open %s: %w", jar, err)
	}
	defer zr.Close()
	f, err := zr.Open("META-INF/MANIFEST.MF")
	if err != nil {
		return nil, fmt.Errorf("localstack: %s has no manifest: %w", jar, err)
	}
	defer f.Close()
	classPath, err := manifestAttribute(f, "Class-Path")
	if err != nil {
		return nil, fmt.Errorf("localstack: manifest of %s: %w", jar, err)
	}
	var names []string
	for _, e := range strings.Fields(classPath) {
		name, ok := strings.CutPrefix(e, "lib/")
		if !ok || strings.Contains(name, "/") {
			return nil, fmt.Errorf("localstack: manifest of %s: Class-Path entry %q is not lib/NAME.jar", jar, e)
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("localstack: manifest of %s lists no Class-Path", jar)
	}
	return names, nil
}

// manifestAttribute returns one main attribute of a JAR manifest, its
// continuation lines (a leading space) joined.
func manifestAttribute(r io.Reader, name string) (string, error) {
	sc := bufio.NewScanner(io.LimitReader(r, 1<<20))
	var value strings.Builder
	in := false
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" { // the end of the main section
			break
		}
		if rest, ok := strings.CutPrefix(line, " "); ok {
			if in {
				value.WriteString(rest)
			}
			continue
		}
		if in {
			break
		}
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			in = true
			value.WriteString(strings.TrimPrefix(v, " "))
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	if !in {
		return "", fmt.Errorf("no %s attribute", name)
	}
	return value.String(), nil
}

// pruneLauncherLib removes every jar of target/lib that the launcher jar's
// manifest does not list (one left by an older build), so target/lib holds
// exactly the current build's jars, and returns their names.
func pruneLauncherLib(launcherDir string) ([]string, error) {
	want, err := launcherManifestJars(launcherDir)
	if err != nil {
		return nil, err
	}
	lib := filepath.Join(launcherDir, "target", "lib")
	entries, err := os.ReadDir(lib)
	if err != nil {
		return nil, fmt.Errorf("localstack: list %s: %w", lib, err)
	}
	var removed []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(strings.ToLower(e.Name()), ".jar") || slices.Contains(want, e.Name()) {
			continue
		}
		if err := os.Remove(filepath.Join(lib, e.Name())); err != nil && !os.IsNotExist(err) {
			return removed, fmt.Errorf("localstack: remove the stale jar %s: %w", filepath.Join(lib, e.Name()), err)
		}
		removed = append(removed, e.Name())
	}
	for _, name := range want {
		if _, err := os.Stat(filepath.Join(lib, name)); err != nil {
			return removed, fmt.Errorf("localstack: %s lists lib/%s, which is missing: %w", launcherJar, name, err)
		}
	}
	return removed, nil
}

// isHotPluginJar reports whether path names a jar of the baedal-hot plugin
// (baedal-hot-VERSION.jar), of any version.
func isHotPluginJar(path string) bool {
	base := filepath.Base(path)
	return strings.HasPrefix(base, "baedal-hot-") && strings.HasSuffix(base, ".jar")
}

// classpathWithHotPlugin returns a launcher classpath (colon-separated, as
// recorded in a node's command line) with every baedal-hot jar replaced by
// pluginJar: a wildcard entry (DIR/*) is expanded to its jars, in name
// order, because a wildcard cannot leave one out, and the launcher jar is
// replaced by a copy without its manifest's Class-Path (written in dir),
// because the JVM adds the jars that lists, the current baedal-hot jar
// among them, to any classpath the launcher jar is on.
func classpathWithHotPlugin(classpath, pluginJar, dir string) (string, error) {
	var out []string
	for _, e := range strings.Split(classpath, string(os.PathListSeparator)) {
		if d, ok := strings.CutSuffix(e, "*"); ok && (d == "" || strings.HasSuffix(d, string(os.PathSeparator))) {
			jars, err := filepath.Glob(filepath.Join(d, "*.jar"))
			if err != nil {
				return "", err
			}
			slices.Sort(jars)
			for _, j := range jars {
				if !isHotPluginJar(j) {
					out = append(out, j)
				}
			}
			continue
		}
		switch {
		case isHotPluginJar(e):
		case filepath.Base(e) == filepath.Base(launcherJar):
			copied := filepath.Join(dir, launcherWithoutClassPath)
			if err := copyJarWithoutClassPath(e, copied); err != nil {
				return "", err
			}
			out = append(out, copied)
		default:
			out = append(out, e)
		}
	}
	return strings.Join(append(out, pluginJar), string(os.PathListSeparator)), nil
}

// launcherWithoutClassPath names the copy of the launcher jar that
// classpathWithHotPlugin puts on an explicit classpath.
const launcherWithoutClassPath = "baedal-opensearch-launcher-without-class-path.jar"

// copyJarWithoutClassPath copies the jar src to dst with every entry but
// its manifest, which keeps only the version and the Main-Class.
func copyJarWithoutClassPath(src, dst string) error {
	zr, err := zip.OpenReader(src)
	if err != nil {
		return fmt.Errorf("localstack: open %s: %w", src, err)
	}
	defer zr.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp := dst + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	zw := zip.NewWriter(f)
	for _, entry := range zr.File {
		if entry.Name != "META-INF/MANIFEST.MF" {
			if err := zw.Copy(entry); err != nil {
				f.Close()
				return fmt.Errorf("localstack: copy %s of %s: %w", entry.Name, src, err)
			}
			continue
		}
		r, err := entry.Open()
		if err != nil {
			f.Close()
			return err
		}
		mainClass, err := manifestAttribute(r, "Main-Class")
		r.Close()
		if err != nil {
			f.Close()
			return fmt.Errorf("localstack: manifest of %s: %w", src, err)
		}
		w, err := zw.Create(entry.Name)
		if err == nil {
			_, err = fmt.Fprintf(w, "Manifest-Version: 1.0\r\nMain-Class: %s\r\n\r\n", mainClass)
		}
		if err != nil {
			f.Close()
			return err
		}
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// HotPluginStamp is what a build of the baedal-hot plugin reports: its
// version (the nodes' _nodes/plugins) and the wire version of its status
// message (opensearch/hot-plugin/pom.xml stamps both).
type HotPluginStamp struct {
	Version     string
	WireVersion int
}

// hotPluginWireRE finds the wire version property in the plugin's pom.
var hotPluginWireRE = regexp.MustCompile(`<baedal\.hot\.wire>\s*([0-9]+)\s*</baedal\.hot\.wire>`)

// HotPluginWireVersion returns the wire version the checked-out plugin
// sources are built with (baedal.hot.wire in opensearch/hot-plugin/pom.xml).
func HotPluginWireVersion(launcherDir string) (int, error) {
	pom := filepath.Join(launcherDir, "hot-plugin", "pom.xml")
	raw, err := os.ReadFile(pom)
	if err != nil {
		return 0, fmt.Errorf("localstack: read %s: %w", pom, err)
	}
	m := hotPluginWireRE.FindSubmatch(raw)
	if m == nil {
		return 0, fmt.Errorf("localstack: %s has no <baedal.hot.wire> property", pom)
	}
	return strconv.Atoi(string(m[1]))
}

// BuildHotPlugin builds a second jar of the baedal-hot plugin from the
// checked-out sources, stamped with another version and wire version, in
// outDir (Maven's build directory for it; the checked-out build's target/ is
// left alone), and returns its path. A rolling-upgrade test runs a cluster
// on one build and then the other.
func BuildHotPlugin(ctx context.Context, launcherDir, jdkHome string, stamp HotPluginStamp, outDir string, progress io.Writer) (string, error) {
	if stamp.Version == "" || strings.ContainsAny(stamp.Version, "/ \t$") || stamp.WireVersion < 0 {
		return "", fmt.Errorf("localstack: hot plugin stamp %+v: want a version without '/', '$' or spaces and a wire version >= 0", stamp)
	}
	outDir, err := filepath.Abs(outDir)
	if err != nil {
		return "", err
	}
	start := time.Now()
	cmd := exec.CommandContext(ctx, "mvn", "-q", "-B", "-DskipTests", "-pl", "hot-plugin", "package",
		"-Dbaedal.hot.version="+stamp.Version, "-Dbaedal.hot.wire="+strconv.Itoa(stamp.WireVersion),
		"-Dbaedal.hot.buildDirectory="+outDir)
	cmd.Dir = launcherDir
	cmd.Env = append(os.Environ(), "JAVA_HOME="+jdkHome)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("localstack: build the baedal-hot plugin %s (mvn package in %s): %w\n%s", stamp.Version, launcherDir, err, lastLines(string(out), 30))
	}
	jar := filepath.Join(outDir, "baedal-hot-"+stamp.Version+".jar")
	if _, err := os.Stat(jar); err != nil {
		return "", fmt.Errorf("localstack: mvn package in %s did not produce %s", launcherDir, jar)
	}
	fmt.Fprintf(progress, "built the baedal-hot plugin %s (wire version %d) in %s\n", stamp.Version, stamp.WireVersion, time.Since(start).Round(time.Second))
	return jar, nil
}
