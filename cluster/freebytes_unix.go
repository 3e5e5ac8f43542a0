//go:build unix

package cluster

import "golang.org/x/sys/unix"

// freeBytes is the space an unprivileged writer has left on dir's file
// system.
func freeBytes(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
