// Package browsertest drives a real headless Chromium for the console's
// browser tests: it finds (or installs) the browser, starts it with a fresh
// profile, evaluates JavaScript, polls predicates, collects page errors and
// saves screenshots of failed tests.
//
// Invariant: a test that cannot get a browser fails in CI and is skipped
// locally (testenv.Unavailable).
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/baedal/baedal/internal/testenv"
)

// chromiumPath is where Debian's chromium package puts the browser.
const chromiumPath = "/usr/bin/chromium"

// chromiumPackages are installed when the browser is missing: the browser
// and a Korean font, so that screenshots show Hangul rather than boxes.
var chromiumPackages = []string{"chromium", "fonts-nanum"}

// RequireChromium returns the browser's path, installing Debian's chromium
// with apt-get when it is missing and the test runs as root. When it cannot,
// the test fails in CI and is skipped locally.
func RequireChromium(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err == nil {
		return chromiumPath
	}
	if os.Geteuid() != 0 {
		testenv.Unavailable(t, fmt.Errorf("%s is missing and the test is not root, so it cannot install it; run: apt-get install -y %s", chromiumPath, strings.Join(chromiumPackages, " ")))
	}
	t.Logf("%s is missing: installing %v with apt-get", chromiumPath, chromiumPackages)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// Wait for the dpkg lock instead of failing when another test package
	// installs something at the same moment.
	lock := "-oDPkg::Lock::Timeout=300"
	if out, err := aptGet(ctx, lock, "update", "-q"); err != nil {
		testenv.Unavailable(t, fmt.Errorf("apt-get update: %v\n%s", err, tail(out)))
	}
	if out, err := aptGet(ctx, append([]string{lock, "install", "-y", "-q"}, chromiumPackages...)...); err != nil {
		testenv.Unavailable(t, fmt.Errorf("apt-get install %v: %v\n%s", chromiumPackages, err, tail(out)))
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		testenv.Unavailable(t, fmt.Errorf("apt-get installed %v but %s is still missing: %w", chromiumPackages, chromiumPath, err))
	}
	return chromiumPath
}

func aptGet(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "apt-get", args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	return cmd.CombinedOutput()
}

func tail(out []byte) string {
	const keep = 2000
	if len(out) > keep {
		out = out[len(out)-keep:]
	}
	return string(out)
}

// Browser is one headless Chromium with one tab.
type Browser struct {
	tab      context.Context
	jsErrors chan string
}

// New starts a headless Chromium with a fresh profile; it is stopped
// when the test ends. Page exceptions and console errors are collected in
// jsErrors.
func New(t *testing.T, execPath string) *Browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(execPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("lang", "ko-KR"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	// The browser lives as long as this context: not the test's deadline,
	// so a screenshot can still be taken after a step timed out.
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &Browser{jsErrors: make(chan string, 64)}
	tab, cancelTab := chromedp.NewContext(alloc, chromedp.WithListener(b.listen))
	b.tab = tab
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	// The first action starts the browser.
	if err := chromedp.Do(tab); err != nil {
		testenv.Unavailable(t, fmt.Errorf("start %s: %w", execPath, err))
	}
	return b
}

// Do runs actions with a timeout.
func (b *Browser) Do(t *testing.T, what string, timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.tab, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Eval evaluates a JavaScript expression (awaiting a promise) into T.
func Eval[T any](t *testing.T, b *Browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.tab, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// WaitFor polls a JavaScript predicate until it is truthy.
func (b *Browser) WaitFor(t *testing.T, what, predicate string, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.tab, timeout+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](predicate,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
	if err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, predicate, err)
	}
}

// screenshot saves a full-page PNG as name under dir and returns its path.
func (b *Browser) screenshot(dir, name string) (string, error) {
	ctx, cancel := context.WithTimeout(b.tab, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+".png")
	return path, os.WriteFile(path, png, 0o644)
}

// artifactDir holds screenshots of failed browser tests (and of every step
// when BAEDAL_CONSOLE_SCREENSHOTS is set); it is not committed.
const artifactDir = "testdata/artifacts"

// ScreenshotOnFailure registers a cleanup that saves a screenshot when t
// failed. Register it after New: cleanups run last-in first-out, so
// the browser is still open.
func (b *Browser) ScreenshotOnFailure(t *testing.T) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		path, err := b.screenshot(artifactDir, t.Name()+"-failure")
		if err != nil {
			t.Logf("no failure screenshot: %v", err)
			return
		}
		abs, _ := filepath.Abs(path)
		t.Logf("failure screenshot: %s", abs)
	})
}

// Snapshot saves a screenshot of a step when BAEDAL_CONSOLE_SCREENSHOTS is
// set, to look at the page as a person would.
func (b *Browser) Snapshot(t *testing.T, step string) {
	t.Helper()
	if os.Getenv("BAEDAL_CONSOLE_SCREENSHOTS") == "" {
		return
	}
	path, err := b.screenshot(artifactDir, t.Name()+"-"+step)
	if err != nil {
		t.Errorf("screenshot %s: %v", step, err)
		return
	}
	t.Logf("screenshot: %s", path)
}

// TakeJSErrors returns the page errors seen so far.
func (b *Browser) TakeJSErrors() []string {
	var out []string
	for {
		select {
		case e := <-b.jsErrors:
			out = append(out, e)
		default:
			return out
		}
	}
}

// listen collects uncaught exceptions, console.error calls and browser log
// errors (a Content-Security-Policy violation is one).
func (b *Browser) listen(ev any) {
	var msg string
	switch e := ev.(type) {
	case *runtime.EventExceptionThrown:
		msg = "exception: " + e.ExceptionDetails.Text
		if e.ExceptionDetails.Exception != nil {
			msg += " " + e.ExceptionDetails.Exception.Description
		}
	case *runtime.EventConsoleAPICalled:
		if e.Type != runtime.ConsoleAPICalledTypeError {
			return
		}
		msg = "console.error:"
		for _, a := range e.Args {
			msg += " " + string(a.Value) + a.Description
		}
	case *cdplog.EventEntryAdded:
		// Failed requests (the 400 of a bad search) are expected; CSP
		// violations (source "security") and script errors are not.
		if e.Entry.Level != cdplog.EntryLevelError || e.Entry.Source == cdplog.EntrySourceNetwork {
			return
		}
		msg = "log: " + e.Entry.Text + " " + e.Entry.URL
	default:
		return
	}
	select {
	case b.jsErrors <- msg:
	default:
	}
}
