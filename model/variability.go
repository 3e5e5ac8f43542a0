package model

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// GangSlowdown is how much slower than its nominal pace a gang runs on
// GPUs whose own multipliers (each GPU's measured iteration-time factor
// for the job's kind of work; 1 is the median GPU) are multipliers and
// whose nodes are nodes, one per GPU in the same order: the slowest GPU
// sets the pace of every step (pm, the largest multiplier), and a gang
// whose GPUs are on more than one node pays penalty on every step as
// well (loc; 1 on one node). The job's iteration time is its nominal one
// × pm × loc. An empty gang runs at the nominal pace (1, 1).
func GangSlowdown[N comparable](multipliers []float64, nodes []N, penalty float64) (pm, loc float64) {
	pm, loc = 1, 1
	for i, m := range multipliers {
		if i == 0 || m > pm {
			pm = m
		}
	}
	for _, n := range nodes {
		if n != nodes[0] {
			return pm, penalty
		}
	}
	return pm, loc
}

// ReadVariability reads a variability profile: a CSV file whose header
// has GPU_ID (the GPUs' positions in the cluster's order, 0, 1, 2… in
// order) and one PerfVar_<class> column per application class (each
// GPU's multiplier for the class; other columns are ignored, # starts a
// comment line). It is the shape of the PAL data's profile_seed42.csv and
// of the profile-seed-S.csv that `cluster replay --pal --out` writes.
func ReadVariability(path string) ([]map[string]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comment = '#'
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: no header: %w", path, err)
	}
	id := -1
	classes := map[int]string{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		switch {
		case h == "GPU_ID":
			id = i
		case strings.HasPrefix(h, "PerfVar_") && len(h) > len("PerfVar_"):
			classes[i] = strings.TrimPrefix(h, "PerfVar_")
		}
	}
	if id < 0 || len(classes) == 0 {
		return nil, fmt.Errorf("%s: the header needs GPU_ID and at least one PerfVar_<class> column (it has %s)", path, strings.Join(header, ","))
	}
	var out []map[string]float64
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		line, _ := r.FieldPos(0)
		if got := strings.TrimSpace(rec[id]); got != strconv.Itoa(len(out)) {
			return nil, fmt.Errorf("%s line %d: GPU_ID %q where %d was expected (ids count from 0 in the cluster's order)", path, line, got, len(out))
		}
		m := map[string]float64{}
		for i, class := range classes {
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[i]), 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s line %d, column PerfVar_%s: %q is not a multiplier above 0", path, line, class, rec[i])
			}
			m[class] = v
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no GPUs", path)
	}
	return out, nil
}

// SetVariability gives the shape's GPUs, in order (node by node), the
// profile's multipliers: one row per GPU.
func (s *Shape) SetVariability(profile []map[string]float64) error {
	if n := s.GPUCount(); n != len(profile) {
		return fmt.Errorf("the profile has %d GPUs and the cluster %d", len(profile), n)
	}
	i := 0
	for n := range s.Nodes {
		for g := range s.Nodes[n].GPUs {
			s.Nodes[n].GPUs[g].Variability = profile[i]
			i++
		}
	}
	return nil
}
