package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestSigningKeyKnownAnswer derives the key of AWS's published example
// ("Examples of how to derive a signing key for Signature Version 4").
func TestSigningKeyKnownAnswer(t *testing.T) {
	k := SigningKey("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", []byte("20120215"), "us-east-1", "iam")
	const want = "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d"
	if got := hex.EncodeToString(k[:]); got != want {
		t.Fatalf("signing key = %s, want %s", got, want)
	}
}

// TestHMACMatchesCryptoHMAC compares HMAC with crypto/hmac on random keys
// (shorter and longer than a SHA-256 block) and messages.
func TestHMACMatchesCryptoHMAC(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 2000; i++ {
		key := make([]byte, r.IntN(200))
		data := make([]byte, r.IntN(300))
		for j := range key {
			key[j] = byte(r.Uint32())
		}
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		m := hmac.New(sha256.New, key)
		m.Write(data)
		want := m.Sum(nil)
		if got := HMAC(key, data); !hmac.Equal(got[:], want) {
			t.Fatalf("key of %d bytes, data of %d: HMAC = %x, want %x", len(key), len(data), got, want)
		}
	}
}

// TestSigningKeyCache asks for more keys than the cache holds, in
// turns and from many goroutines, and requires every answer to be the
// derivation's.
func TestSigningKeyCache(t *testing.T) {
	type input struct{ secret, day, region, service string }
	var inputs []input
	for i := 0; i < 3*cacheSize; i++ {
		inputs = append(inputs, input{
			secret:  fmt.Sprintf("secret-%d", i%5),
			day:     fmt.Sprintf("202611%02d", 1+i%4),
			region:  []string{"us-east-1", "eu-west-1"}[i%2],
			service: []string{"sagemaker", "s3", "sagemaker"}[i%3],
		})
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 50; round++ {
				in := inputs[(g*7+round)%len(inputs)]
				got := SigningKey(in.secret, []byte(in.day), in.region, in.service)
				if want := derive(in.secret, []byte(in.day), in.region, in.service); got != want {
					t.Errorf("%+v: key %x, want %x", in, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	// A key derived is then served from the cache.
	fresh := input{"fresh-secret", "20261130", "ap-south-1", "sagemaker"}
	if _, ok := cache.get(fresh.secret, []byte(fresh.day), fresh.region, fresh.service); ok {
		t.Fatal("a key never asked for is in the cache")
	}
	want := SigningKey(fresh.secret, []byte(fresh.day), fresh.region, fresh.service)
	if k, ok := cache.get(fresh.secret, []byte(fresh.day), fresh.region, fresh.service); !ok || k != want {
		t.Errorf("a key just derived is not served from the cache (ok %v)", ok)
	}
	a := SigningKey("s", []byte("20261127"), "us-east-1", "sagemaker")
	for _, other := range []Key{
		SigningKey("t", []byte("20261127"), "us-east-1", "sagemaker"),
		SigningKey("s", []byte("20261128"), "us-east-1", "sagemaker"),
		SigningKey("s", []byte("20261127"), "us-east-2", "sagemaker"),
		SigningKey("s", []byte("20261127"), "us-east-1", "sagemakr"),
	} {
		if other == a {
			t.Fatal("a key changed input gave the same key")
		}
	}
}

func BenchmarkSigningKey(b *testing.B) {
	day := []byte("20261127")
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			SigningKey("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", day, "us-east-1", "sagemaker")
		}
	})
	b.Run("derived", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			derive("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", day, "us-east-1", "sagemaker")
		}
	})
}
