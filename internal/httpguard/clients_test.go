package httpguard

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestClients(t *testing.T) {
	c, err := ParseClients([]string{"10.0.0.0/8", "192.168.1.7", "::1", " fd00::/8 "})
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]bool{
		"10.1.2.3:5555":        true,
		"192.168.1.7:1":        true,
		"192.168.1.8:1":        false,
		"[::1]:80":             true,
		"[::ffff:10.9.9.9]:80": true, // an IPv4 client on a dual-stack socket
		"[fd00::1%eth0]:80":    true,
		"8.8.8.8:53":           false,
		"not an address":       false,
	} {
		if got := c.Allows(addr); got != want {
			t.Errorf("Allows(%q) = %v, want %v", addr, got, want)
		}
	}
	if got := c.String(); got != "10.0.0.0/8,192.168.1.7,::1,fd00::/8" {
		t.Errorf("String() = %q", got)
	}
	for _, bad := range []string{"0x1234", "myapp.diode", "10.0.0.0/33", "10.0.0.1/8", ""} {
		if _, err := ParseClients([]string{bad}); err == nil {
			t.Errorf("ParseClients(%q) accepted it", bad)
		}
	}
	var all Clients
	if !all.Allows("8.8.8.8:1") || !all.Empty() {
		t.Error("the zero Clients does not allow everyone")
	}

	h := c.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	for addr, want := range map[string]int{"10.0.0.1:1": http.StatusNoContent, "8.8.8.8:1": http.StatusForbidden} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = addr
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("request from %s: %d, want %d", addr, w.Code, want)
		}
	}
}
