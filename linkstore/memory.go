package linkstore

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/api"
)

// Memory report limits: GET /v1/admin/links/memory?records=N.
const (
	DefaultMemoryRecords = 200
	MaxMemoryRecords     = 2000
	// memoryReportTTL bounds the life of the scratch keys, should the
	// report stop before deleting them.
	memoryReportTTL = time.Minute
)

// MemoryFormat is what one value format costs in the store's Redis: the
// same generated records written in this format, measured with MEMORY
// USAGE (as `baedal bench links` measures its sample keys).
type MemoryFormat struct {
	Codec     string `json:"codec"`
	KeyFormat string `json:"key_format"`
	// Current is true for the format new clicks are written in.
	Current bool `json:"current"`
	// Unavailable says why the format was not measured (a dictionary
	// codec without a dictionary); the figures are then zero.
	Unavailable          string  `json:"unavailable,omitempty"`
	KeyBytesPerRecord    float64 `json:"key_bytes_per_record"`
	ValueBytesPerRecord  float64 `json:"value_bytes_per_record"`
	MemoryUsagePerRecord float64 `json:"memory_usage_per_record"`
	// MemoryRatio is MemoryUsagePerRecord over the baseline's (json-raw
	// values under text keys).
	MemoryRatio float64 `json:"memory_ratio"`
}

// MemoryReport is the body of GET /v1/admin/links/memory.
type MemoryReport struct {
	Records int            `json:"records"`
	Formats []MemoryFormat `json:"formats"`
}

// memoryCodecs are built once: some codecs keep pools of coders.
type memoryCodecs struct {
	once   sync.Once
	codecs map[string]Codec
	errs   map[string]error
}

// MeasureMemory writes n generated records once per codec into the new
// store's Redis, under fresh random click ids (SET NX, expiring after a
// minute), reads MEMORY USAGE of every key and deletes them. The baseline
// (json-raw) uses text keys as stored before the migration; the other
// formats use the store's key format.
func (s *Service) MeasureMemory(ctx context.Context, n int) (MemoryReport, error) {
	st := s.new
	s.mem.once.Do(func() {
		s.mem.codecs, s.mem.errs = map[string]Codec{}, map[string]error{}
		for _, name := range CodecNames() {
			c, err := NewCodec(name, st.cfg.Codecs, st.dicts)
			if err != nil {
				s.mem.errs[name] = err
				continue
			}
			s.mem.codecs[name] = c
		}
	})
	records := Generate(rand.Uint64(), n)
	for i := range records {
		records[i].ClickID = NewClickID() // never an id a client stored
	}
	report := MemoryReport{Records: n, Formats: []MemoryFormat{}}
	var baseline float64
	for _, name := range CodecNames() {
		keyFormat := st.keyFormat
		if name == CodecJSONRaw {
			keyFormat = KeyText
		}
		f := MemoryFormat{Codec: name, KeyFormat: keyFormat.String(), Current: name == st.cfg.Codec}
		codec, ok := s.mem.codecs[name]
		if !ok {
			f.Unavailable = s.mem.errs[name].Error()
			report.Formats = append(report.Formats, f)
			continue
		}
		if err := s.measureFormat(ctx, codec, keyFormat, records, &f); err != nil {
			return MemoryReport{}, err
		}
		if name == CodecJSONRaw {
			baseline = f.MemoryUsagePerRecord
		}
		if baseline > 0 {
			f.MemoryRatio = math.Round(f.MemoryUsagePerRecord/baseline*1000) / 1000
		}
		report.Formats = append(report.Formats, f)
	}
	return report, nil
}

func (s *Service) measureFormat(ctx context.Context, codec Codec, keyFormat KeyFormat, records []Record, f *MemoryFormat) error {
	rdb := s.new.primary
	keys := make([]string, 0, len(records))
	defer func() {
		// Delete what was written even when the request was cancelled.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if len(keys) > 0 {
			if err := rdb.Del(ctx, keys...).Err(); err != nil {
				s.log.Warn("links memory report: scratch keys left to expire", "err", err)
			}
		}
	}()
	var keyBytes, valueBytes int64
	pipe := rdb.Pipeline()
	var buf []byte
	for i := range records {
		var err error
		if buf, err = codec.Encode(buf[:0], &records[i]); err != nil {
			return fmt.Errorf("linkstore: memory report: encode %s: %w", codec.Name(), err)
		}
		key := string(AppendKey([]byte(s.new.cfg.Namespace), keyFormat, records[i].ClickID))
		pipe.SetNX(ctx, key, string(buf), memoryReportTTL)
		keys = append(keys, key)
		keyBytes += int64(len(key))
		valueBytes += int64(len(buf))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("linkstore: memory report: write %s records: %w", codec.Name(), err)
	}
	usage := make([]*redis.IntCmd, len(keys))
	pipe = rdb.Pipeline()
	for i, key := range keys {
		usage[i] = pipe.MemoryUsage(ctx, key)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("linkstore: memory report: MEMORY USAGE of %s records: %w", codec.Name(), err)
	}
	var total int64
	for _, u := range usage {
		total += u.Val()
	}
	n := float64(len(records))
	f.KeyBytesPerRecord = round2(float64(keyBytes) / n)
	f.ValueBytesPerRecord = round2(float64(valueBytes) / n)
	f.MemoryUsagePerRecord = round2(float64(total) / n)
	return nil
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

func (s *Service) handleGetMemory(w http.ResponseWriter, r *http.Request) error {
	q, err := api.Query(r)
	if err != nil {
		return err
	}
	n := DefaultMemoryRecords
	if raw := q.Get("records"); raw != "" {
		v, err := api.ParseInt("records", raw, 1, MaxMemoryRecords)
		if err != nil {
			return err
		}
		n = int(v)
	}
	report, err := s.MeasureMemory(r.Context(), n)
	if err != nil {
		return err
	}
	api.WriteJSON(w, http.StatusOK, report)
	return nil
}
