package linkstore

import (
	"reflect"
	"testing"
	"time"
)

func TestDiffRecords(t *testing.T) {
	a := Generate(testSeed, 1)[0]
	if d := DiffRecords(&a, &a); len(d) != 0 {
		t.Fatalf("same record: %v", d)
	}
	b := a
	b.Device.UserAgent = "other"
	b.SubParams = map[string]string{"only_new": "1"}
	for k, v := range a.SubParams {
		b.SubParams[k] = v
	}
	b.ClickedAt = a.ClickedAt.Add(time.Second)
	got := DiffRecords(&a, &b)
	want := []FieldDiff{
		{Field: "sub_params.only_new", Old: "<absent>", New: "1"},
		{Field: "device.user_agent", Old: a.Device.UserAgent, New: "other"},
		{Field: "clicked_at", Old: a.ClickedAt.Format(time.RFC3339Nano), New: b.ClickedAt.Format(time.RFC3339Nano)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DiffRecords\n got %+v\nwant %+v", got, want)
	}
	// The same instant in another zone is no difference.
	c := a
	c.ClickedAt = a.ClickedAt.In(time.FixedZone("KST", 9*3600))
	if d := DiffRecords(&a, &c); len(d) != 0 {
		t.Fatalf("zone-only change reported: %v", d)
	}
}

func TestModeSteps(t *testing.T) {
	cases := map[Mode][]Mode{
		ModeOldOnly:    {ModeDualWrite},
		ModeDualWrite:  {ModeOldOnly, ModeShadowRead},
		ModeShadowRead: {ModeDualWrite, ModeNewOnly},
		ModeNewOnly:    {ModeShadowRead},
	}
	for m, want := range cases {
		if got := m.NextModes(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s.NextModes() = %v, want %v", m, got, want)
		}
	}
	if _, err := ParseMode("both"); err == nil {
		t.Fatal("ParseMode accepted an unknown mode")
	}
}
