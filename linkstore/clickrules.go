package linkstore

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/baedal/baedal/api"
)

// webSchemes are the schemes of fallback_url and tracking_link (web pages
// opened in a browser), and of a deep_link_url besides the app schemes.
var webSchemes = []string{"https", "http"}

// forbiddenSchemes run code or read local data when a browser or web view
// opens them; no configuration may allow them.
var forbiddenSchemes = []string{"javascript", "vbscript", "data", "file", "blob", "about", "filesystem"}

// validateAppScheme checks one custom deep-link scheme (RFC 3986 syntax:
// a letter, then letters, digits, '+', '-' or '.').
func validateAppScheme(scheme string) error {
	if scheme == "" {
		return fmt.Errorf("empty scheme")
	}
	for i, r := range scheme {
		letter := 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
		if !letter && (i == 0 || !('0' <= r && r <= '9' || r == '+' || r == '-' || r == '.')) {
			return fmt.Errorf("scheme %q: want a letter, then letters, digits, '+', '-' or '.'", scheme)
		}
	}
	if slices.Contains(forbiddenSchemes, strings.ToLower(scheme)) {
		return fmt.Errorf("scheme %q is never allowed (forbidden: %s)", scheme, strings.Join(forbiddenSchemes, ", "))
	}
	return nil
}

// schemeList is a comma-separated list of schemes as a flag value.
type schemeList []string

func (l *schemeList) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

func (l *schemeList) Set(s string) error {
	*l = nil
	for _, f := range strings.Split(s, ",") {
		if f = strings.ToLower(strings.TrimSpace(f)); f != "" {
			*l = append(*l, f)
		}
	}
	return nil
}

// checkClickURLs checks the schemes of the URLs of a click: deep_link_url
// is https, http or one of appSchemes; fallback_url and tracking_link are
// https or http. A web URL must name a host. The 400 problem names the
// field and the allowed schemes. It runs after validateClick, so every URL
// set is an absolute URL.
func checkClickURLs(rec *Record, appSchemes []string) error {
	deepLinkSchemes := append(slices.Clone(webSchemes), appSchemes...)
	for _, f := range []struct {
		name, value string
		allowed     []string
	}{
		{"deep_link_url", rec.DeepLinkURL, deepLinkSchemes},
		{"fallback_url", rec.FallbackURL, webSchemes},
		{"tracking_link", rec.TrackingLink, webSchemes},
	} {
		if f.value == "" {
			continue
		}
		u, err := url.Parse(f.value)
		if err != nil {
			return api.BadRequest(f.name, fmt.Sprintf("%q is not a URL", truncateForError([]byte(f.value))), f.allowed...)
		}
		if !slices.ContainsFunc(f.allowed, func(s string) bool { return strings.EqualFold(s, u.Scheme) }) {
			return api.BadRequest(f.name, fmt.Sprintf("scheme %q is not allowed; allowed: %s", truncateForError([]byte(u.Scheme)), strings.Join(f.allowed, ", ")), f.allowed...)
		}
		if slices.Contains(webSchemes, u.Scheme) && u.Host == "" {
			return api.BadRequest(f.name, fmt.Sprintf("%q has no host (want %s://host/...)", truncateForError([]byte(f.value)), u.Scheme), f.allowed...)
		}
	}
	return nil
}

// checkExpiry checks that expiresAt is after now and at most now+max. The
// 400 problem names expires_at and the allowed range, as RFC 3339 times and
// a span in words ("720 hours"), not in Go's duration notation.
func checkExpiry(expiresAt, now time.Time, max time.Duration) error {
	latest := now.Add(max)
	if !expiresAt.After(now) || expiresAt.After(latest) {
		return api.BadRequest("expires_at", fmt.Sprintf("%s is not in the allowed range: after now (%s) and at most %s later (%s)",
			expiresAt.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano), spanInWords(max), latest.UTC().Format(time.RFC3339Nano)))
	}
	return nil
}

// spanInWords says d in the largest of hours, minutes, seconds and
// milliseconds that divides it: "720 hours", "1 minute", "90 seconds".
func spanInWords(d time.Duration) string {
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{time.Hour, "hour"}, {time.Minute, "minute"}, {time.Second, "second"}, {time.Millisecond, "millisecond"}} {
		if n := d / u.unit; d%u.unit == 0 || u.unit == time.Millisecond {
			if n == 1 {
				return "1 " + u.name
			}
			return fmt.Sprintf("%d %ss", n, u.name)
		}
	}
	return ""
}
