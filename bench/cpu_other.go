//go:build !unix

package bench

import "time"

// processCPU is 0 where getrusage is not there: the CPU figures read 0.
func processCPU() time.Duration { return 0 }
