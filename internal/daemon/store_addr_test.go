package daemon

import (
	"errors"
	"net"
	"testing"
)

func TestAdvertised(t *testing.T) {
	ifaces := func() ([]net.Addr, error) {
		return []net.Addr{
			&net.IPNet{IP: net.ParseIP("127.0.0.1"), Mask: net.CIDRMask(8, 32)},
			&net.IPNet{IP: net.ParseIP("fe80::1"), Mask: net.CIDRMask(64, 128)},
			&net.IPNet{IP: net.ParseIP("10.0.0.7"), Mask: net.CIDRMask(24, 32)},
		}, nil
	}
	none := func() ([]net.Addr, error) { return nil, errors.New("no interfaces") }
	for _, tc := range []struct {
		addr  *net.TCPAddr
		addrs func() ([]net.Addr, error)
		want  string
	}{
		{&net.TCPAddr{IP: net.IPv4zero, Port: 8080}, ifaces, "10.0.0.7:8080"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, ifaces, "10.0.0.7:8080"},
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 7331}, ifaces, "127.0.0.1:7331"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 8080}, none, "0.0.0.0:8080"},
	} {
		if got := advertised(tc.addr, tc.addrs); got != tc.want {
			t.Errorf("advertised(%v) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}
