package seal

import (
	"bytes"
	"errors"
	"testing"
)

func TestSealOpen(t *testing.T) {
	key := bytes.Repeat([]byte{7}, KeySize)
	b, err := New(key, "test-v1")
	if err != nil {
		t.Fatal(err)
	}
	rec := b.Seal([]byte("hello"))
	if got, err := b.Open(rec); err != nil || string(got) != "hello" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if bytes.Equal(rec, b.Seal([]byte("hello"))) {
		t.Error("two seals of the same record are equal: the nonce is not random")
	}
	other, _ := New(key, "other-v1")
	otherKey, _ := New(bytes.Repeat([]byte{8}, KeySize), "test-v1")
	altered := bytes.Clone(rec)
	altered[len(altered)-1] ^= 1
	for name, tc := range map[string]struct {
		box *Box
		rec []byte
	}{
		"another purpose": {other, rec},
		"another key":     {otherKey, rec},
		"altered":         {b, altered},
		"short":           {b, rec[:10]},
		"empty":           {b, nil},
	} {
		if _, err := tc.box.Open(tc.rec); !errors.Is(err, ErrOpen) {
			t.Errorf("%s: Open err = %v, want ErrOpen", name, err)
		}
	}
	if _, err := New(key[:16], "x"); err == nil {
		t.Error("New accepted a 16-byte key")
	}
}

func FuzzOpen(f *testing.F) {
	b, _ := New(bytes.Repeat([]byte{1}, KeySize), "fuzz")
	f.Add(b.Seal([]byte("x")))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, rec []byte) {
		b.Open(rec) // must not panic
	})
}
