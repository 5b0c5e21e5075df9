package catalog_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/catalog"
)

// BenchmarkEventsIngestion times the two steps of POST /v1/events before
// the append, on a body of 1,000 events, each alone: step=parse is
// catalog.ParseEvents, step=check-body the server's check of every body
// (api.CheckBodyText), and step=check-text that check as it was before
// duplicate keys and surrogate escapes were refused (one UTF-8 scan and two
// byte searches), kept here as the baseline. They run in one process, so
// (parse + check-body) / (parse + check-text) survives a busy machine.
//
//	go test ./catalog/ -run='^$' -bench=EventsIngestion -benchtime=2s -count=3
func BenchmarkEventsIngestion(b *testing.B) {
	stream := catalog.NewEventStream(1, 100_000)
	hot := make([]catalog.Event, 1000)
	for i := range hot {
		hot[i] = stream.Next()
	}
	hotArray, _ := json.Marshal(hot)
	var fullNDJSON []byte
	gen := catalog.NewGenerator(1)
	for i := range 1000 {
		raw, _ := gen.Shop(i).UpsertEvent().MarshalJSON()
		fullNDJSON = append(append(fullNDJSON, raw...), '\n')
	}
	textOnly := func(body []byte) error {
		if utf8.Valid(body) && bytes.IndexByte(body, 0) < 0 && !bytes.Contains(body, []byte(`\u0000`)) {
			return nil
		}
		return api.CheckBodyText(body)
	}
	parse := func(body []byte) error {
		_, err := catalog.ParseEvents(body)
		return err
	}
	steps := []struct {
		name string
		run  func([]byte) error
	}{
		{"parse", parse},
		{"check-text", textOnly},
		{"check-body", api.CheckBodyText},
	}
	for _, bc := range []struct {
		name string
		body []byte
	}{{"body=stream1000", hotArray}, {"body=fullshops1000", fullNDJSON}} {
		for _, st := range steps {
			b.Run(bc.name+"/step="+st.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(bc.body)))
				for b.Loop() {
					if err := st.run(bc.body); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
