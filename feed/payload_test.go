package feed

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// randomPost returns a post whose strings hold what JSON must escape:
// quotes, backslashes, control characters, HTML, U+2028, non-ASCII.
func randomPost(rng *rand.Rand) Post {
	pieces := []string{"a", "Z", " ", `"`, `\`, "\n", "\t", "\x01", "<", ">", "&", "\u2028", "가", "😀", `\"`, `","createdAt":"`, "}", "{"}
	text := func(n int) string {
		var sb strings.Builder
		for range n {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return sb.String()
	}
	id := rng.Int64N(MaxPostID) + 1
	return Post{
		ID: id, AuthorID: rng.Int64N(1<<40) + 1,
		Username: text(rng.IntN(8)), ProfilePic: text(rng.IntN(4)), Text: text(1 + rng.IntN(40)),
		CreatedAt: PostTime(id),
	}
}

// TestPayloadsSplicedEqualTheEncodedValues: for random posts, the spliced
// page and compatibility bodies are byte for byte what encoding/json makes
// of the decoded values (the handlers' output before splicing).
func TestPayloadsSplicedEqualTheEncodedValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	compatCache := newPostCache(8)
	for round := range 300 {
		posts := make([]Post, rng.IntN(5))
		raw := make([]json.RawMessage, len(posts))
		items := make([]CompatFeedItem, len(posts))
		for i := range posts {
			posts[i] = randomPost(rng)
			enc, err := json.Marshal(posts[i])
			if err != nil {
				t.Fatal(err)
			}
			if _, err := checkPayload(enc, posts[i].ID); err != nil {
				t.Fatalf("payload %s of post %d rejected: %v", enc, posts[i].ID, err)
			}
			raw[i] = enc
			p := posts[i]
			items[i] = CompatFeedItem{Username: p.Username, ProfilePic: p.ProfilePic, Text: p.Text, Timestamp: p.CreatedAt}
		}
		var next int64
		if round%2 == 1 {
			next = rng.Int64N(MaxPostID) + 1
		}
		want, _ := json.Marshal(Page{Posts: posts, NextBefore: next})
		if len(posts) == 0 {
			want, _ = json.Marshal(Page{Posts: []Post{}, NextBefore: next})
		}
		if got := appendPagePayload(nil, raw, next); !bytes.Equal(got, want) {
			t.Fatalf("page:\n got %s\nwant %s", got, want)
		}
		want, _ = json.Marshal(items)
		// Without a cache, then twice with one (elements made, then
		// reused); the small cache also rotates its generations.
		for _, cache := range []*postCache{nil, compatCache, compatCache} {
			got, err := appendCompatPayload(nil, raw, cache)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("compat (cache %v, %v):\n got %s\nwant %s", cache != nil, err, got, want)
			}
		}
	}
}

func TestCheckPayloadRejects(t *testing.T) {
	good := `{"id":42,"authorId":7,"username":"u","profilePic":"","text":"hi \"x\" \\","createdAt":"2025-01-01T00:00:00Z"}`
	if f, err := checkPayload([]byte(good), 42); err != nil || string(f.text) != `"hi \"x\" \\"` || string(f.createdAt) != `"2025-01-01T00:00:00Z"` {
		t.Fatalf("good payload: %+v, %v", f, err)
	}
	for name, c := range map[string]struct {
		payload string
		id      int64
	}{
		"another post's id":  {good, 43},
		"id prefix of other": {good, 4},
		"empty":              {"", 42},
		"not an object":      {`[42]`, 42},
		"spaces":             {strings.Replace(good, `"id":42`, `"id": 42`, 1), 42},
		"fields reordered":   {`{"authorId":7,"id":42,"username":"u","profilePic":"","text":"hi","createdAt":"2025-01-01T00:00:00Z"}`, 42},
		"field missing":      {`{"id":42,"authorId":7,"username":"u","text":"hi","createdAt":"2025-01-01T00:00:00Z"}`, 42},
		"extra field":        {strings.Replace(good, `}`, `,"likes":3}`, 1), 42},
		"trailing data":      {good + " ", 42},
		"string id":          {strings.Replace(good, `"id":42`, `"id":"42"`, 1), 42},
		"negative author":    {strings.Replace(good, `"authorId":7`, `"authorId":-7`, 1), 42},
		"number as text":     {strings.Replace(good, `"text":"hi \"x\" \\"`, `"text":5`, 1), 42},
		"unterminated":       {`{"id":42,"authorId":7,"username":"u","profilePic":"","text":"hi\"}`, 42},
		"raw control char":   {strings.Replace(good, "hi", "h\ni", 1), 42},
		"escaped quote ends": {strings.Replace(good, `\\"`, `\"`, 1), 42},
	} {
		if _, err := checkPayload([]byte(c.payload), c.id); err == nil {
			t.Errorf("%s: %s accepted as post %d", name, c.payload, c.id)
		}
	}
}

// FuzzPayloadRoundTrip: every encoded Post passes checkPayload under its
// own id only, and its compatibility item is what encoding/json makes.
//
//	go test ./feed -run '^$' -fuzz FuzzPayloadRoundTrip -fuzztime 30s
func FuzzPayloadRoundTrip(f *testing.F) {
	f.Add(int64(1), int64(2), "u", "", "text", int64(0))
	f.Add(int64(MaxPostID), int64(1), "a\"b", "https://x/<y>", "\\\u2028\x00가", int64(1234))
	f.Fuzz(func(t *testing.T, id, author int64, username, pic, text string, ms int64) {
		if id <= 0 || author <= 0 {
			return
		}
		p := Post{ID: id, AuthorID: author, Username: username, ProfilePic: pic, Text: text,
			CreatedAt: time.UnixMilli(ms % (1 << 45)).UTC()}
		enc, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := checkPayload(enc, id); err != nil {
			t.Fatalf("%s rejected: %v", enc, err)
		}
		if got, ok := payloadID(enc); !ok || got != id {
			t.Fatalf("payloadID(%s) = %d, %v; want %d", enc, got, ok, id)
		}
		if _, err := checkPayload(enc, id+1); err == nil {
			t.Fatalf("%s accepted as post %d", enc, id+1)
		}
		want, _ := json.Marshal([]CompatFeedItem{{Username: username, ProfilePic: pic, Text: text, Timestamp: p.CreatedAt}})
		if got, err := appendCompatPayload(nil, []json.RawMessage{enc}, nil); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("compat (%v):\n got %s\nwant %s", err, got, want)
		}
	})
}

// BenchmarkPayloadPage checks and splices a page of 20 payloads, as a
// compatibility read does.
//
//	go test ./feed -run '^$' -bench PayloadPage -benchmem
func BenchmarkPayloadPage(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	raw := make([]json.RawMessage, 20)
	ids := make([]int64, len(raw))
	size := 0
	for i := range raw {
		p := Post{ID: PostIDAt(time.Now(), i), AuthorID: int64(i + 1), Username: "user" + strconv.Itoa(i),
			ProfilePic: "https://img.example/u/" + strconv.Itoa(i) + ".png", Text: strings.Repeat("some text ", 10+rng.IntN(10)), CreatedAt: PostTime(PostIDAt(time.Now(), i))}
		raw[i], _ = json.Marshal(p)
		ids[i] = p.ID
		size += len(raw[i])
	}
	for _, cache := range []*postCache{nil, newPostCache(100)} {
		name := "no-cache"
		if cache != nil {
			name = "compat-cache"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			buf := make([]byte, 0, 16<<10)
			for b.Loop() {
				for i, p := range raw {
					if _, err := checkPayload(p, ids[i]); err != nil {
						b.Fatal(err)
					}
				}
				var err error
				if buf, err = appendCompatPayload(buf[:0], raw, cache); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
