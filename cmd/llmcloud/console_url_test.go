package main

import "testing"

func TestConsoleURL(t *testing.T) {
	for addr, want := range map[string]string{
		"[::]:8000":      "http://localhost:8000/",
		"0.0.0.0:8000":   "http://localhost:8000/",
		"127.0.0.1:9":    "http://127.0.0.1:9/",
		"[::1]:8000":     "http://[::1]:8000/",
		"myhost:80":      "http://myhost:80/",
		"not-an-address": "http://not-an-address/",
	} {
		if got := consoleURL(addr); got != want {
			t.Errorf("consoleURL(%q) = %q, want %q", addr, got, want)
		}
	}
}
