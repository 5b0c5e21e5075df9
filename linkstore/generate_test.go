package linkstore

import (
	"reflect"
	"strings"
	"testing"
)

func TestGenerateIsDeterministic(t *testing.T) {
	a, b := Generate(42, 100), Generate(42, 100)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed gave different records")
	}
	c := Generate(43, 100)
	if reflect.DeepEqual(a[0], c[0]) {
		t.Fatal("different seeds gave the same first record")
	}
}

func TestGeneratedRecordsLookReal(t *testing.T) {
	records := Generate(testSeed, 2000)
	jsonCodec, _ := NewCodec(CodecJSONRaw, Options{}, nil)
	ids := map[ClickID]bool{}
	ips := map[string]bool{}
	oses := map[string]int{}
	total := 0
	for i := range records {
		r := &records[i]
		ids[r.ClickID] = true
		ips[r.Device.IP.String()] = true
		oses[r.Device.OS]++
		if r.ClickID[6]>>4 != 4 {
			t.Fatalf("record %d: click id %s is not a version-4 UUID", i, r.ClickID)
		}
		if !strings.HasPrefix(r.DeepLinkURL, "baedal://shop/") || !strings.Contains(r.DeepLinkURL, r.ClickID.String()) {
			t.Fatalf("record %d: deep link %q", i, r.DeepLinkURL)
		}
		if !strings.HasPrefix(r.Device.UserAgent, "Mozilla/5.0 (") {
			t.Fatalf("record %d: user agent %q", i, r.Device.UserAgent)
		}
		if !r.ExpiresAt.After(r.ClickedAt) || r.ClickedAt.IsZero() {
			t.Fatalf("record %d: clicked %v expires %v", i, r.ClickedAt, r.ExpiresAt)
		}
		v, err := jsonCodec.Encode(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		total += len(v)
	}
	if len(ids) != len(records) {
		t.Errorf("%d distinct click ids in %d records", len(ids), len(records))
	}
	if len(ips) < len(records)*9/10 {
		t.Errorf("only %d distinct IPs in %d records", len(ips), len(records))
	}
	if oses["iOS"] < 700 || oses["Android"] < 900 {
		t.Errorf("OS mix %v, want ~45%% iOS / 55%% Android", oses)
	}
	avg := total / len(records)
	if avg < 900 || avg > 1800 {
		t.Errorf("average JSON size %d bytes, want ~1-1.5 KB", avg)
	}
}
