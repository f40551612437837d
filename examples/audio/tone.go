package main

import (
	"encoding/binary"
	"math"
)

// sineWave returns seconds of a sine tone at freq Hz as 16-bit signed
// little-endian mono PCM at rate samples per second, at half of full
// scale (-9 dBFS RMS): synthetic "speech" for the demo.
func sineWave(freq float64, rate int, seconds float64) []byte {
	n := int(float64(rate) * seconds)
	pcm := make([]byte, 2*n)
	for i := range n {
		v := 0.5 * math.Sin(2*math.Pi*freq*float64(i)/float64(rate))
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(int16(v*math.MaxInt16)))
	}
	return pcm
}

// analyzer measures PCM as it arrives in pieces of any size: the level
// (RMS, in dBFS) and the pitch (from zero crossings) of everything so far.
type analyzer struct {
	rate      int
	odd       []byte // a sample cut in two by a piece boundary
	samples   int
	sumSq     float64
	crossings int
	first     int // sample index of the first zero crossing
	last      int // sample index of the last one
	neg       bool
}

func (a *analyzer) write(b []byte) {
	if len(a.odd) > 0 && len(b) > 0 {
		a.sample(int16(binary.LittleEndian.Uint16([]byte{a.odd[0], b[0]})))
		a.odd, b = a.odd[:0], b[1:]
	}
	for len(b) >= 2 {
		a.sample(int16(binary.LittleEndian.Uint16(b)))
		b = b[2:]
	}
	a.odd = append(a.odd, b...)
}

func (a *analyzer) sample(s int16) {
	v := float64(s) / math.MaxInt16
	a.sumSq += v * v
	if neg := s < 0; a.samples > 0 && neg != a.neg {
		if a.crossings == 0 {
			a.first = a.samples
		}
		a.last = a.samples
		a.crossings++
	}
	a.neg = s < 0
	a.samples++
}

// millis returns the duration of the audio so far.
func (a *analyzer) millis() int { return a.samples * 1000 / a.rate }

// levelDBFS returns the RMS level in dB relative to full scale.
func (a *analyzer) levelDBFS() float64 {
	if a.samples == 0 || a.sumSq == 0 {
		return math.Inf(-1)
	}
	return math.Round(10*math.Log10(a.sumSq/float64(a.samples))*10) / 10
}

// pitchHz estimates the frequency: a sine crosses zero twice per period,
// so half-periods are counted between the first and the last crossing.
func (a *analyzer) pitchHz() int {
	if a.crossings < 2 {
		return 0
	}
	halfPeriods := float64(a.crossings - 1)
	return int(math.Round(halfPeriods / 2 * float64(a.rate) / float64(a.last-a.first)))
}
