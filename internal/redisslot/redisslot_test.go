package redisslot

import "testing"

func TestCRC16AndSlot(t *testing.T) {
	// CRC-16/XMODEM's check value, and slots the Redis Cluster
	// specification gives.
	if got := CRC16("123456789"); got != 0x31c3 {
		t.Fatalf("CRC16(123456789) = %#04x, want 0x31c3", got)
	}
	for key, want := range map[string]int{"foo": 12182, "{user1000}.following": 3443, "{user1000}.followers": 3443} {
		if got := Of(key); got != want {
			t.Errorf("Of(%q) = %d, want %d", key, got, want)
		}
	}
	if Of("{123456789}:v") != 0x31c3 || Of("a{}b") == Of("") {
		t.Fatal("hash tags: a non-empty tag hashes alone, an empty one does not count")
	}
}
