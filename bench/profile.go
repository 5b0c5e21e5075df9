package bench

import (
	"fmt"
	"strings"
)

// Profile is the size of a benchmark run. ProfileQuick must finish in well
// under a minute on a 2-core laptop; ProfileFull produces the published
// figures. Each benchmark decides what the profiles mean for its workload.
type Profile string

const (
	ProfileQuick Profile = "quick"
	ProfileFull  Profile = "full"
)

// Profiles lists the valid profiles in the order they are documented.
var profiles = []Profile{ProfileQuick, ProfileFull}

// ParseProfile returns the profile named s ("quick" or "full"); the error
// names the allowed values.
func ParseProfile(s string) (Profile, error) {
	for _, p := range profiles {
		if s == string(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("bench: profile %q is not one of the allowed values: %s", s, allowedProfiles())
}

func allowedProfiles() string {
	names := make([]string, len(profiles))
	for i, p := range profiles {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

// String returns the profile's name.
func (p Profile) String() string { return string(p) }

// Set parses s into p, so a *Profile is a flag.Value:
//
//	profile := bench.ProfileQuick
//	fs.Var(&profile, "profile", "run size: quick or full")
func (p *Profile) Set(s string) error {
	parsed, err := ParseProfile(s)
	if err != nil {
		return err
	}
	*p = parsed
	return nil
}

// Pick returns quick for ProfileQuick and full for every other profile.
//
//	docs := bench.Pick(profile, 2_000, 200_000)
func Pick[T any](p Profile, quick, full T) T {
	if p == ProfileQuick {
		return quick
	}
	return full
}
