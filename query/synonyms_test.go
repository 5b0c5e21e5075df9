package query

import (
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The reviewed list stays well-formed: single lower-case words, each in one
// group only, no group larger than MaxSynonyms+1 forms, each form a legal
// word of a search.
func TestSynonymGroupsAreWellFormed(t *testing.T) {
	seen := map[string]int{}
	for i, g := range SynonymGroups() {
		if len(g) < 2 || len(g) > MaxSynonyms+1 {
			t.Errorf("group %v has %d forms, want 2..%d", g, len(g), MaxSynonyms+1)
		}
		for _, f := range g {
			if f != strings.ToLower(f) || strings.ContainsFunc(f, unicode.IsSpace) || f == "" {
				t.Errorf("form %q of %v: want one lower-case word", f, g)
			}
			if j, ok := seen[f]; ok {
				t.Errorf("form %q is in groups %d and %d", f, j, i)
			}
			seen[f] = i
			if _, err := ParseRequest(Request{Q: f, Page: 1, Size: 20}.Encode()); err != nil {
				t.Errorf("form %q is not a legal search: %v", f, err)
			}
		}
	}
	if len(seen) < 20 {
		t.Errorf("%d forms: the list lost its entries", len(seen))
	}
}

func TestSynonymsAreSymmetricAndIgnoreCase(t *testing.T) {
	for _, tc := range []struct {
		word string
		want []string
	}{
		{"burger", []string{"버거"}},
		{"BURGER", []string{"버거"}},
		{"버거", []string{"burger"}},
		{"BBQ", []string{"비비큐"}},
		{"비비큐", []string{"bbq"}},
		{"초밥", []string{"스시", "sushi"}},
		{"sushi", []string{"초밥", "스시"}},
		{"통닭", nil}, // a related dish, not another form of 치킨
		{"없는말", nil},
	} {
		if got := Synonyms(tc.word); !slices.Equal(got, tc.want) {
			t.Errorf("Synonyms(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
	for _, g := range SynonymGroups() {
		for _, f := range g {
			for _, other := range Synonyms(f) {
				if !slices.Contains(Synonyms(other), f) {
					t.Errorf("%q lists %q but not the reverse", f, other)
				}
			}
		}
	}
	if got := WordForms("Pizza", false); !slices.Equal(got, []string{"Pizza"}) {
		t.Errorf("WordForms without synonyms = %q", got)
	}
	if got := WordForms("Pizza", true); !slices.Equal(got, []string{"Pizza", "피자"}) {
		t.Errorf("WordForms with synonyms = %q", got)
	}
}
