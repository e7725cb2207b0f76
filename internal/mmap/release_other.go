//go:build !linux

package mmap

// Release does nothing where Map does not map with Linux's page advice.
func Release(b []byte) {}

// Populate does nothing where Map does not map with Linux's page advice.
func Populate(b []byte) {}
