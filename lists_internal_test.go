package junction

import "testing"

// FuzzDecodeCursor: any cursor a host sends decodes or is refused,
// without a panic, and every cursor the hub makes decodes to its key.
func FuzzDecodeCursor(f *testing.F) {
	f.Add("In8DAQEJcGFnZVRva2VuAf-AAAEBAQdMYXN0VUlEAQwAAAAK_4ABBXVwX19lAA==", "up__e")
	f.Add("zzz", "")
	f.Add("", "a\u00e9\x00")
	f.Fuzz(func(t *testing.T, cursor, key string) {
		decodeCursor(cursor)
		if got, ok := decodeCursor(encodeCursor(key)); !ok || got != key {
			t.Fatalf("decodeCursor(encodeCursor(%q)) = %q, %v", key, got, ok)
		}
	})
}
