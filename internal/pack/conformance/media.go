package conformance

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
)

// redPixelPNG returns a 1x1 red PNG, the minimal test image the suite
// suggests.
func redPixelPNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 0xff, A: 0xff})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		// Encoding an in-memory 1x1 image cannot fail.
		panic("conformance: encoding PNG: " + err.Error())
	}
	return buf.Bytes()
}

// silentWAV returns a valid RIFF/WAVE file: 8 kHz, mono, 8-bit PCM, n
// samples of silence.
func silentWAV(n int) []byte {
	const (
		rate     = 8000
		channels = 1
		bits     = 8
	)
	var buf bytes.Buffer
	le := func(v any) { binary.Write(&buf, binary.LittleEndian, v) }
	buf.WriteString("RIFF")
	le(uint32(36 + n))
	buf.WriteString("WAVEfmt ")
	le(uint32(16))                         // fmt chunk size
	le(uint16(1))                          // PCM
	le(uint16(channels))                   // channels
	le(uint32(rate))                       // sample rate
	le(uint32(rate * channels * bits / 8)) // byte rate
	le(uint16(channels * bits / 8))        // block align
	le(uint16(bits))                       // bits per sample
	buf.WriteString("data")
	le(uint32(n))
	for range n {
		buf.WriteByte(0x80) // 8-bit PCM is unsigned: 128 is silence
	}
	return buf.Bytes()
}
