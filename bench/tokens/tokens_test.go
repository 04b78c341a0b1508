package tokens

import "testing"

func TestCounter(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if n := c.O200k([]byte("hello world")); n != 2 {
		t.Errorf("o200k(hello world) = %d tokens, want 2", n)
	}
	if n := c.CL100k([]byte("hello world")); n != 2 {
		t.Errorf("cl100k(hello world) = %d tokens, want 2", n)
	}
}
