package bench

import (
	"flag"
	"io"
	"strings"
	"testing"
)

func TestParseProfile(t *testing.T) {
	for _, s := range []string{"quick", "full"} {
		p, err := ParseProfile(s)
		if err != nil || string(p) != s {
			t.Errorf("ParseProfile(%q) = %q, %v", s, p, err)
		}
	}
	for _, s := range []string{"", "QUICK", "fast", " quick", "full\n"} {
		_, err := ParseProfile(s)
		if err == nil {
			t.Errorf("ParseProfile(%q) accepted it", s)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "quick, full") || !strings.Contains(msg, "profile") {
			t.Errorf("ParseProfile(%q) error %q should name the field and the allowed values quick, full", s, msg)
		}
	}
}

func TestProfileIsAFlagValue(t *testing.T) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	profile := ProfileQuick
	fs.Var(&profile, "profile", "run size: quick or full")
	if err := fs.Parse([]string{"--profile=full"}); err != nil || profile != ProfileFull {
		t.Fatalf("--profile=full: profile %q, err %v", profile, err)
	}
	err := fs.Parse([]string{"--profile=huge"})
	if err == nil || !strings.Contains(err.Error(), "-profile") || !strings.Contains(err.Error(), "quick, full") {
		t.Errorf("--profile=huge: err %v, want one naming -profile and quick, full", err)
	}
	if profile != ProfileFull {
		t.Errorf("a rejected value changed the profile to %q", profile)
	}
}

func TestPick(t *testing.T) {
	if got := Pick(ProfileQuick, 2_000, 200_000); got != 2_000 {
		t.Errorf("Pick(quick) = %d", got)
	}
	if got := Pick(ProfileFull, "small", "large"); got != "large" {
		t.Errorf("Pick(full) = %q", got)
	}
}

func FuzzParseProfile(f *testing.F) {
	for _, s := range []string{"quick", "full", "", "Quick", "fullx", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseProfile(s)
		if (err == nil) != (s == "quick" || s == "full") {
			t.Fatalf("ParseProfile(%q) = %q, %v", s, p, err)
		}
		if err == nil && string(p) != s {
			t.Fatalf("ParseProfile(%q) = %q", s, p)
		}
		if err != nil && !strings.Contains(err.Error(), "quick, full") {
			t.Fatalf("error %q does not name the allowed values", err)
		}
	})
}
