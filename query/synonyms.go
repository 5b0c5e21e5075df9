package query

import (
	"slices"
	"strings"
)

// synonymGroups are the reviewed Korean and English forms of common menu
// words and brands (docs/search.md, "Synonyms"). Each group lists forms of
// one word: a search for any of them also matches the others. Forms are
// single words (the text is matched word by word), English in lower case.
// Only forms a delivery-app user types for the same dish or brand belong
// here, never related dishes: 햄버거 and 버거 are one dish, 치킨 and 통닭 are
// not.
var synonymGroups = [][]string{
	// Dishes.
	{"버거", "burger"},
	{"햄버거", "hamburger"},
	{"치즈버거", "cheeseburger"},
	{"피자", "pizza"},
	{"치킨", "chicken"},
	{"커피", "coffee"},
	{"아메리카노", "americano"},
	{"라떼", "latte"},
	{"파스타", "pasta"},
	{"스파게티", "spaghetti"},
	{"샐러드", "salad"},
	{"떡볶이", "tteokbokki"},
	{"김밥", "gimbap", "kimbap"},
	{"초밥", "스시", "sushi"},
	{"돈까스", "돈가스", "tonkatsu"},
	{"짜장면", "자장면", "jajangmyeon"},
	{"짬뽕", "jjamppong"},
	{"족발", "jokbal"},
	{"마라탕", "malatang"},
	{"샌드위치", "sandwich"},
	{"토스트", "toast"},
	// Brands written both ways.
	{"비비큐", "bbq"},
	{"비비큐치킨", "bbq치킨"},
	{"케이에프씨", "kfc"},
	{"비에이치씨", "bhc"},
	{"맥도날드", "mcdonalds"},
	{"버거킹", "burgerking"},
	{"스타벅스", "starbucks"},
	{"피자헛", "pizzahut"},
	{"도미노피자", "dominos"},
	{"서브웨이", "subway"},
}

// MaxSynonyms bounds the other forms of one word, so a search's text
// clauses stay within (1+MaxSynonyms) times those of its words.
const MaxSynonyms = 2

// SynonymGroups returns a copy of the reviewed synonym groups.
func SynonymGroups() [][]string {
	out := make([][]string, len(synonymGroups))
	for i, g := range synonymGroups {
		out[i] = slices.Clone(g)
	}
	return out
}

// Synonyms returns the other forms of word (matched without regard to
// case), or nil when it has none.
func Synonyms(word string) []string {
	w := strings.ToLower(word)
	for _, g := range synonymGroups {
		if slices.Contains(g, w) {
			others := make([]string, 0, len(g)-1)
			for _, f := range g {
				if f != w {
					others = append(others, f)
				}
			}
			return others
		}
	}
	return nil
}

// WordForms returns word and, when synonyms is true, its other forms:
// the alternatives a word of the text is matched by.
func WordForms(word string, synonyms bool) []string {
	forms := []string{word}
	if synonyms {
		forms = append(forms, Synonyms(word)...)
	}
	return forms
}
