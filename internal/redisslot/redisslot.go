// Package redisslot computes Redis Cluster hash slots as the cluster
// specification defines them (CRC-16/XMODEM of the key, or of its hash
// tag, modulo 16,384), so that keys can be named to land in chosen slots:
// the feed's hot-key copies and the link store's bucket shards spread
// evenly over the slots. Invariant: Of agrees with CLUSTER KEYSLOT (tested
// against a real cluster in feed and linkstore).
package redisslot

import "strings"

// Count is the number of hash slots of a Redis Cluster.
const Count = 16384

// CRC16 is CRC-16/XMODEM, Redis Cluster's key hash.
func CRC16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// Of returns the hash slot of key: CRC16 of the key, or of its hash tag
// (the text between the first '{' and the next '}', when not empty),
// modulo Count.
func Of(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	return int(CRC16(key)) % Count
}
