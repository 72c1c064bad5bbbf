package chaos

import (
	"net"
	"os"
	"testing"
)

func TestSocketOwner(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dialled, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer dialled.Close()
	accepted, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer accepted.Close()
	tests := []struct {
		name   string
		owners map[int]string
		want   string
		found  bool
	}{
		{"this process dialled", map[int]string{os.Getpid(): "me"}, "me", true},
		{"another process", map[int]string{os.Getppid(): "parent"}, "", false},
		{"nobody named", map[int]string{}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found := socketOwner(accepted, tt.owners)
			if got != tt.want || found != tt.found {
				t.Errorf("socketOwner = %q, %v; want %q, %v", got, found, tt.want, tt.found)
			}
		})
	}
}

func TestHexPort(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"0100007F:1F90", 8080},
		{"00000000000000000000000001000000:0050", 80},
		{"nocolon", -1},
		{"0100007F:XYZ", -1},
	}
	for _, tt := range tests {
		if got := hexPort(tt.in); got != tt.want {
			t.Errorf("hexPort(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
