package catalog

import (
	"encoding/json"
	"testing"
)

// go test ./catalog/ -run=^$ -bench=. -benchtime=2s
func BenchmarkGeneratorShop(b *testing.B) {
	g := NewGenerator(1)
	b.ReportAllocs()
	menus := 0
	i := 0
	for b.Loop() {
		s := g.Shop(i)
		menus += len(s.Menus)
		i++
	}
	b.ReportMetric(float64(menus)/float64(i), "menus/shop")
}

func BenchmarkEventStreamNext(b *testing.B) {
	s := NewEventStream(1, 1_000_000)
	b.ReportAllocs()
	for b.Loop() {
		s.Next()
	}
}

// go test ./catalog/ -run=^$ -bench=ParseEvents
func BenchmarkParseEvents(b *testing.B) {
	stream := NewEventStream(1, 100_000)
	var hot []Event
	for len(hot) < 500 {
		hot = append(hot, stream.Next())
	}
	hotBody, _ := json.Marshal(hot)
	fullBody, _ := json.Marshal([]Event{NewGenerator(1).Shop(0).UpsertEvent()})
	for _, bc := range []struct {
		name   string
		body   []byte
		events int
	}{{"body=stream500", hotBody, 500}, {"body=fullshop", fullBody, 1}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.body)))
			for b.Loop() {
				if _, err := ParseEvents(bc.body); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*bc.events), "ns/event")
		})
	}
}
