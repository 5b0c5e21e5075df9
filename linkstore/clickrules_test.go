package linkstore

import (
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baedal/baedal/api"
)

func TestCheckClickURLs(t *testing.T) {
	good := Generate(testSeed, 1)[0] // baedal:// deep link, https fallback and tracking link
	if err := checkClickURLs(&good, DefaultServiceConfig().AppSchemes); err != nil {
		t.Fatalf("a generated record is refused: %v", err)
	}
	web := []string{"https", "http"}
	deep := []string{"https", "http", "baedal"}
	cases := []struct {
		name    string
		edit    func(*Record)
		field   string // "" = accepted
		allowed []string
	}{
		{"javascript deep link", func(r *Record) { r.DeepLinkURL = "javascript:alert(document.cookie)" }, "deep_link_url", deep},
		{"javascript in capitals", func(r *Record) { r.DeepLinkURL = "JavaScript://%0aalert(1)" }, "deep_link_url", deep},
		{"data deep link", func(r *Record) { r.DeepLinkURL = "data:text/html,<script>alert(1)</script>" }, "deep_link_url", deep},
		{"unknown app scheme", func(r *Record) { r.DeepLinkURL = "baemin://shop/1" }, "deep_link_url", deep},
		{"https without host", func(r *Record) { r.DeepLinkURL = "https:evil" }, "deep_link_url", deep},
		{"https deep link", func(r *Record) { r.DeepLinkURL = "https://baedal.app/shop/1" }, "", nil},
		{"app scheme in capitals", func(r *Record) { r.DeepLinkURL = "BAEDAL://shop/1" }, "", nil},
		{"javascript fallback", func(r *Record) { r.FallbackURL = "javascript:alert(1)" }, "fallback_url", web},
		{"app scheme fallback", func(r *Record) { r.FallbackURL = "baedal://shop/1" }, "fallback_url", web},
		{"vbscript tracking link", func(r *Record) { r.TrackingLink = "vbscript:msgbox(1)" }, "tracking_link", web},
		{"http tracking link", func(r *Record) { r.TrackingLink = "http://trk.example/c/1" }, "", nil},
		{"no fallback", func(r *Record) { r.FallbackURL = "" }, "", nil},
	}
	for _, tc := range cases {
		rec := good
		tc.edit(&rec)
		err := checkClickURLs(&rec, []string{"baedal"})
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: refused: %v", tc.name, err)
			}
			continue
		}
		var p *api.Problem
		if !errors.As(err, &p) || p.Status != 400 || p.Field != tc.field || !slices.Equal(p.Allowed, tc.allowed) {
			t.Errorf("%s: got %#v, want a 400 on %s allowing %v", tc.name, err, tc.field, tc.allowed)
		}
	}
	rec := good
	rec.DeepLinkURL = "baemin://shop/1"
	if err := checkClickURLs(&rec, []string{"baedal", "baemin"}); err != nil {
		t.Fatalf("a configured app scheme is refused: %v", err)
	}
}

func TestCheckExpiry(t *testing.T) {
	now := time.Date(2026, 5, 5, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		expiresAt time.Time
		ok        bool
	}{
		{now.Add(-time.Hour), false},
		{now, false},
		{now.Add(time.Millisecond), true},
		{now.Add(time.Hour), true},
		{now.Add(time.Hour + time.Millisecond), false},
		{now.AddDate(100, 0, 0), false},
	} {
		err := checkExpiry(tc.expiresAt, now, time.Hour)
		var p *api.Problem
		switch {
		case tc.ok && err != nil:
			t.Errorf("expires_at now%+v: refused: %v", tc.expiresAt.Sub(now), err)
		case !tc.ok && (!errors.As(err, &p) || p.Status != 400 || p.Field != "expires_at"):
			t.Errorf("expires_at now%+v: got %v, want a 400 on expires_at", tc.expiresAt.Sub(now), err)
		case !tc.ok && (!strings.Contains(p.Detail, "at most 1 hour later") || strings.Contains(p.Detail, "1h0m0s")):
			t.Errorf("expires_at now%+v: the detail %q does not say the span in words", tc.expiresAt.Sub(now), p.Detail)
		}
	}
}

func TestServiceConfigAppSchemesFlag(t *testing.T) {
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg.Flags(fs)
	if got := fs.Lookup("links-app-schemes").DefValue; got != "baedal" {
		t.Fatalf("default --links-app-schemes %q, want baedal", got)
	}
	if err := fs.Parse([]string{"--links-app-schemes= baedal,Baemin ,", "--links-max-lifetime=24h"}); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Service.AppSchemes, []string{"baedal", "baemin"}) || cfg.Service.MaxLifetime != 24*time.Hour {
		t.Fatalf("parsed app schemes %q, max lifetime %s", cfg.Service.AppSchemes, cfg.Service.MaxLifetime)
	}
	for _, bad := range []string{"javascript", "data", "x,File", "1app", "my app", "a:b"} {
		c := DefaultServiceConfig()
		if err := (*schemeList)(&c.AppSchemes).Set(bad); err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "links-app-schemes") {
			t.Errorf("app schemes %q: Validate() = %v, want an error naming links-app-schemes", bad, err)
		}
	}
}
