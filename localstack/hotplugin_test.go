package localstack

import (
	"archive/zip"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeLauncherJar writes a launcher jar whose manifest lists lib/NAME for
// each name, wrapped at 72 bytes as the JDK's jar tool and Maven write it.
func writeLauncherJar(t *testing.T, moduleDir string, names ...string) {
	t.Helper()
	var entries []string
	for _, n := range names {
		entries = append(entries, "lib/"+n)
	}
	line := "Class-Path: " + strings.Join(entries, " ")
	var manifest strings.Builder
	manifest.WriteString("Manifest-Version: 1.0\r\nCreated-By: Maven JAR Plugin 3.4.2\r\n")
	for first := true; line != ""; first = false {
		width := 72
		if !first {
			width = 71
			manifest.WriteString(" ")
		}
		n := min(width, len(line))
		manifest.WriteString(line[:n] + "\r\n")
		line = line[n:]
	}
	manifest.WriteString("Main-Class: dev.baedal.opensearch.Launcher\r\n\r\n")
	path := filepath.Join(moduleDir, launcherJar)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	w, err := zw.Create("META-INF/MANIFEST.MF")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(manifest.String())); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func touchJars(t *testing.T, dir string, names ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("jar"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestPruneLauncherLibLeavesExactlyTheBuildsJars is the state a plugin
// version bump left in opensearch/target/lib: the new baedal-hot jar beside
// the old one, both matched by the launcher's target/lib/* classpath.
func TestPruneLauncherLibLeavesExactlyTheBuildsJars(t *testing.T) {
	dir := t.TempDir()
	current := []string{"opensearch-3.8.0.jar", "lucene-core-10.3.2.jar", "a-jar-with-a-rather-long-name-that-wraps-the-manifest-line-1.0.0.jar", "baedal-hot-0.3.0.jar"}
	writeLauncherJar(t, dir, current...)
	lib := filepath.Join(dir, "target", "lib")
	touchJars(t, lib, append([]string{"baedal-hot-0.1.0.jar", "lucene-core-10.3.1.jar"}, current...)...)
	if err := os.WriteFile(filepath.Join(lib, "README.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	removed, err := pruneLauncherLib(dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	if want := []string{"baedal-hot-0.1.0.jar", "lucene-core-10.3.1.jar"}; !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	want := append([]string{"README.txt"}, current...)
	slices.Sort(want)
	if got := listDir(t, lib); !slices.Equal(got, want) {
		t.Errorf("target/lib holds %v, want %v", got, want)
	}

	// A jar the manifest lists but the directory lacks is a broken build.
	if err := os.Remove(filepath.Join(lib, "baedal-hot-0.3.0.jar")); err != nil {
		t.Fatal(err)
	}
	if _, err := pruneLauncherLib(dir); err == nil || !strings.Contains(err.Error(), "lib/baedal-hot-0.3.0.jar") {
		t.Errorf("pruneLauncherLib with a listed jar missing: %v, want an error naming it", err)
	}
}

func TestManifestAttributeReadsContinuationLines(t *testing.T) {
	m := "Manifest-Version: 1.0\r\nClass-Path: lib/a.jar lib/b\r\n .jar lib/c.jar\r\nMain-Class: x.Y\r\n\r\nName: other\r\nClass-Path: no\r\n"
	got, err := manifestAttribute(strings.NewReader(m), "Class-Path")
	if err != nil || got != "lib/a.jar lib/b.jar lib/c.jar" {
		t.Errorf("Class-Path = %q, %v; want the three jars", got, err)
	}
	if _, err := manifestAttribute(strings.NewReader("Manifest-Version: 1.0\r\n\r\nName: x\r\nClass-Path: lib/a.jar\r\n"), "Class-Path"); err == nil {
		t.Errorf("a Class-Path outside the main section was read as the jar's")
	}
}

func TestClasspathWithHotPluginReplacesOnlyTheHotJar(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "target", "lib")
	touchJars(t, lib, "b.jar", "baedal-hot-0.3.0.jar", "a.jar")
	writeLauncherJar(t, dir, "a.jar", "b.jar", "baedal-hot-0.3.0.jar")
	launcher := filepath.Join(dir, launcherJar)
	state := filepath.Join(dir, "state")
	copied := filepath.Join(state, launcherWithoutClassPath)
	next := filepath.Join(dir, "previous", "baedal-hot-0.3.0-previous.jar")

	got, err := classpathWithHotPlugin(launcher+":"+filepath.Join(lib, "*"), next, state)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{copied, filepath.Join(lib, "a.jar"), filepath.Join(lib, "b.jar"), next}, ":")
	if got != want {
		t.Errorf("classpath:\n got %s\nwant %s", got, want)
	}
	// The launcher's copy lists no jar: the JVM would add the listed
	// baedal-hot jar to the classpath beside next.
	zr, err := zip.OpenReader(copied)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	f, err := zr.Open("META-INF/MANIFEST.MF")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	raw, _ := io.ReadAll(f)
	if main, err := manifestAttribute(strings.NewReader(string(raw)), "Main-Class"); err != nil || main != "dev.baedal.opensearch.Launcher" {
		t.Errorf("the copy's Main-Class is %q (%v), want the launcher's", main, err)
	}
	if _, err := manifestAttribute(strings.NewReader(string(raw)), "Class-Path"); err == nil {
		t.Errorf("the copy of the launcher jar still has a Class-Path:\n%s", raw)
	}

	// Swapped again (back to the checked-out build), the explicit list keeps
	// every other jar and holds one baedal-hot jar.
	back := filepath.Join(lib, "baedal-hot-0.3.0.jar")
	again, err := classpathWithHotPlugin(got, back, state)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join([]string{copied, filepath.Join(lib, "a.jar"), filepath.Join(lib, "b.jar"), back}, ":"); again != want {
		t.Errorf("classpath swapped back:\n got %s\nwant %s", again, want)
	}
}
