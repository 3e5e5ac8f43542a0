//go:build !unix

package cluster

import "errors"

// freeBytes is not read on this system: the store watch is off.
func freeBytes(string) (uint64, error) {
	return 0, errors.New("free space is read on Unix systems only")
}
