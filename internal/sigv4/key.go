// Package sigv4 derives AWS Signature Version 4 signing keys, for the
// request signer of package bidi and the event signature chains of package
// eventstream: one derivation, and one cache, for both.
//
// A session signs its request and then its events with the same key (the
// key of the day, the secret, the region and the service), and a process's
// sessions nearly all share one: deriving it costs four HMACs, looking it
// up in the cache a string comparison.
package sigv4

import (
	"crypto/sha256"
	"sync"
	"sync/atomic"
)

// Terminator ends a SigV4 credential scope.
const Terminator = "aws4_request"

// Key is a SigV4 signing key.
type Key = [sha256.Size]byte

// SigningKey returns the SigV4 signing key for secret on day (yyyymmdd),
// in region, for service:
//
//	HMAC(HMAC(HMAC(HMAC("AWS4"+secret, day), region), service), "aws4_request")
//
// It is safe for concurrent use. The keys of the last few (secret, day,
// region, service) it derived are cached for the life of the process,
// with the secret strings they were derived from (the same strings the
// callers' credentials hold): a key is as sensitive as its secret, and
// lives as long as one credential set stays in use.
func SigningKey(secret string, day []byte, region, service string) Key {
	if k, ok := cache.get(secret, day, region, service); ok {
		return k
	}
	k := derive(secret, day, region, service)
	cache.put(secret, string(day), region, service, k)
	return k
}

// derive computes a signing key.
func derive(secret string, day []byte, region, service string) Key {
	secretKey := make([]byte, 0, 4+len(secret))
	secretKey = append(append(secretKey, "AWS4"...), secret...)
	k := HMAC(secretKey, day)
	clear(secretKey)
	k = HMAC(k[:], []byte(region))
	k = HMAC(k[:], []byte(service))
	return HMAC(k[:], []byte(Terminator))
}

// HMAC returns HMAC-SHA256(key, data) (RFC 2104), without allocating.
func HMAC(key, data []byte) [sha256.Size]byte {
	var pad [sha256.BlockSize]byte
	if len(key) > sha256.BlockSize {
		sum := sha256.Sum256(key)
		copy(pad[:], sum[:])
	} else {
		copy(pad[:], key)
	}
	for i := range pad {
		pad[i] ^= 0x36
	}
	inner := sha256.New()
	inner.Write(pad[:])
	inner.Write(data)
	var sum [sha256.Size]byte
	inner.Sum(sum[:0])
	for i := range pad {
		pad[i] ^= 0x36 ^ 0x5c
	}
	outer := sha256.New()
	outer.Write(pad[:])
	outer.Write(sum[:])
	outer.Sum(sum[:0])
	clear(pad[:])
	return sum
}

// cacheSize bounds the keys kept: a process signs with a handful of
// credential sets and regions at a time, and each changes once a day.
const cacheSize = 8

var cache keyCache

// keyCache holds the last cacheSize keys derived, replaced in turn.
// Lookups take no lock: they read the current table, which put replaces
// whole (copy on write) under mu. A lookup is on the first Send of every
// session, and the sessions of a process often start together: with a
// lock they queued on it, and the waits ran the runtime's semaphore code
// on the deepest path of a Send (docs/design.md, "Stack depth").
type keyCache struct {
	table atomic.Pointer[[cacheSize]cacheEntry] // nil until the first put; never changed once stored

	mu   sync.Mutex // serialises put
	next int        // the entry put replaces next; guarded by mu
}

type cacheEntry struct {
	secret, day, region, service string
	key                          Key
	ok                           bool
}

func (c *keyCache) get(secret string, day []byte, region, service string) (Key, bool) {
	t := c.table.Load()
	if t == nil {
		return Key{}, false
	}
	for i := range t {
		e := &t[i]
		if e.ok && e.day == string(day) && e.secret == secret && e.region == region && e.service == service {
			return e.key, true
		}
	}
	return Key{}, false
}

func (c *keyCache) put(secret, day, region, service string, k Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var t [cacheSize]cacheEntry
	if old := c.table.Load(); old != nil {
		t = *old
	}
	t[c.next] = cacheEntry{secret: secret, day: day, region: region, service: service, key: k, ok: true}
	c.next = (c.next + 1) % cacheSize
	c.table.Store(&t)
}
