// Package seal encrypts and authenticates small records with AES-256-GCM:
// the one way junction keeps a secret it hands out or writes down (sealed
// HTTP session ids, the OAuth token store). A sealed record is a random
// nonce followed by the ciphertext and its tag; a purpose string is bound
// into every record as additional data, so a record sealed for one use is
// refused by another even under the same key. A leaf: the standard
// library only.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

// KeySize is the size of a key: AES-256.
const KeySize = 32

// ErrOpen is the error for a record that is not one this Box sealed: too
// short, altered, sealed under another key or for another purpose.
var ErrOpen = errors.New("seal: not a record sealed with this key for this purpose")

// A Box seals and opens records under one key, for one purpose. It is
// safe for concurrent use.
type Box struct {
	aead    cipher.AEAD
	purpose []byte
}

// New returns a Box for key (KeySize bytes) and purpose.
func New(key []byte, purpose string) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("seal: key of %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead, purpose: []byte(purpose)}, nil
}

// Seal encrypts and authenticates plain.
func (b *Box) Seal(plain []byte) []byte {
	n := b.aead.NonceSize()
	out := make([]byte, n, n+len(plain)+b.aead.Overhead())
	rand.Read(out[:n]) // never fails (crypto/rand)
	return b.aead.Seal(out, out[:n], plain, b.purpose)
}

// Open checks and decrypts a record Seal made; anything else is ErrOpen.
func (b *Box) Open(sealed []byte) ([]byte, error) {
	n := b.aead.NonceSize()
	if len(sealed) < n+b.aead.Overhead() {
		return nil, ErrOpen
	}
	plain, err := b.aead.Open(nil, sealed[:n], sealed[n:], b.purpose)
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}
