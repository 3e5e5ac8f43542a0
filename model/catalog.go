package model

import (
	"fmt"
	"sort"
	"strings"
)

// GPUModel is one entry of the GPU catalog.
type GPUModel struct {
	// Name is the catalog key used in --gpus, cluster files and job specs.
	Name string
	// VRAM is the device's real memory capacity.
	VRAM Bytes
	// Speed is throughput relative to an A100 (1.0): a job's duration is
	// given at reference speed and runs Speed times faster on this model.
	Speed float64
	// IdleWatts and MaxWatts bound the board power; power is interpolated
	// between them by utilisation.
	IdleWatts, MaxWatts float64
	// Source cites where the figures come from.
	Source string
}

// Relative speed is the ratio of dense FP16/BF16 tensor throughput to the
// A100's 312 TFLOPS (NVIDIA A100 datasheet), the figure ML training tracks
// most closely. Max power is the board power/TDP from each vendor datasheet.
// Datasheets give no idle power; idle figures are typical nvidia-smi readings
// of an unloaded board and are an assumption, not a vendor number.
// VRAM is the real capacity: NVIDIA's "40GB" HBM is 40 GiB (nvidia-smi shows
// 40960MiB), so the catalog stores GiB for every model but the H200, whose
// 141GB is stored as the 143771MiB nvidia-smi reports.
var catalog = map[string]GPUModel{
	"A100-40GB": {Name: "A100-40GB", VRAM: 40 * GiB, Speed: 1.0, IdleWatts: 55, MaxWatts: 400,
		Source: "NVIDIA A100 Tensor Core GPU datasheet (SXM4 40GB: 312 TFLOPS FP16 dense, 400 W)"},
	"A100-80GB": {Name: "A100-80GB", VRAM: 80 * GiB, Speed: 1.0, IdleWatts: 60, MaxWatts: 400,
		Source: "NVIDIA A100 Tensor Core GPU datasheet (SXM4 80GB: 312 TFLOPS FP16 dense, 400 W)"},
	"H100-80GB": {Name: "H100-80GB", VRAM: 80 * GiB, Speed: 989.0 / 312, IdleWatts: 70, MaxWatts: 700,
		Source: "NVIDIA H100 Tensor Core GPU datasheet (SXM5: 989 TFLOPS FP16 dense, 700 W)"},
	"H200-141GB": {Name: "H200-141GB", VRAM: 143771 * MiB, Speed: 989.0 / 312, IdleWatts: 75, MaxWatts: 700,
		Source: "NVIDIA H200 Tensor Core GPU datasheet (SXM: 141GB HBM3e, 989 TFLOPS FP16 dense, 700 W)"},
	"V100-16GB": {Name: "V100-16GB", VRAM: 16 * GiB, Speed: 125.0 / 312, IdleWatts: 40, MaxWatts: 300,
		Source: "NVIDIA Tesla V100 datasheet (SXM2 16GB: 125 TFLOPS tensor, 300 W)"},
	"V100-32GB": {Name: "V100-32GB", VRAM: 32 * GiB, Speed: 125.0 / 312, IdleWatts: 40, MaxWatts: 300,
		Source: "NVIDIA Tesla V100 datasheet (SXM2 32GB: 125 TFLOPS tensor, 300 W)"},
	"T4-16GB": {Name: "T4-16GB", VRAM: 16 * GiB, Speed: 65.0 / 312, IdleWatts: 10, MaxWatts: 70,
		Source: "NVIDIA T4 datasheet (65 TFLOPS FP16 mixed precision, 70 W)"},
	"P100-16GB": {Name: "P100-16GB", VRAM: 16 * GiB, Speed: 21.2 / 312, IdleWatts: 30, MaxWatts: 250,
		Source: "NVIDIA Tesla P100 datasheet (SXM2: 21.2 TFLOPS FP16, no tensor cores; PCIe 250 W)"},
	// A K80 board carries two GPUs that the host sees as two devices; the
	// entry is one of them: half the board's 24 GB and 300 W, and half its
	// 8.73 TFLOPS FP32 at boost. The K80 has no fast FP16 path, so its FP32
	// rate is its training rate. Gavel's throughput table (docs/POLICIES.md)
	// measures it as "k80".
	"K80-12GB": {Name: "K80-12GB", VRAM: 12 * GiB, Speed: 4.365 / 312, IdleWatts: 25, MaxWatts: 150,
		Source: "NVIDIA Tesla K80 datasheet (per GPU of the dual-GPU board: 12 GB GDDR5, 4.37 TFLOPS FP32 at boost, 150 W of the board's 300 W)"},
	"A10-24GB": {Name: "A10-24GB", VRAM: 24 * GiB, Speed: 125.0 / 312, IdleWatts: 20, MaxWatts: 150,
		Source: "NVIDIA A10 datasheet (125 TFLOPS FP16 tensor dense, 150 W)"},
	"L4-24GB": {Name: "L4-24GB", VRAM: 24 * GiB, Speed: 121.0 / 312, IdleWatts: 16, MaxWatts: 72,
		Source: "NVIDIA L4 datasheet (121 TFLOPS FP16 tensor dense, 72 W)"},
	// G2 and G3 are the Alibaba trace's undisclosed internal models. Their
	// nodes (8 GPUs, 96-128 cores, 384-768 GiB) match A100-class servers, so
	// they are assumed to be A100-40GB-like (G2) and A100-80GB-like (G3).
	"G2": {Name: "G2", VRAM: 40 * GiB, Speed: 1.0, IdleWatts: 55, MaxWatts: 400,
		Source: "assumption: undisclosed model in the Alibaba 2023 trace, taken as A100-40GB-class"},
	"G3": {Name: "G3", VRAM: 80 * GiB, Speed: 1.0, IdleWatts: 60, MaxWatts: 400,
		Source: "assumption: undisclosed model in the Alibaba 2023 trace, taken as A100-80GB-class"},
}

// catalogAliases maps other spellings (the trace's names among them) to catalog keys.
var catalogAliases = map[string]string{
	"V100M16": "V100-16GB", "V100M32": "V100-32GB", "P100": "P100-16GB", "T4": "T4-16GB",
	"A10": "A10-24GB", "L4": "L4-24GB", "H100": "H100-80GB", "H200": "H200-141GB",
	// Gavel's worker types: its simulated V100s are AWS p3 V100-SXM2-16GB.
	"V100": "V100-16GB", "K80": "K80-12GB",
}

// LookupModel finds a catalog model by name (case-insensitive; trace names accepted).
func LookupModel(name string) (GPUModel, error) {
	if m, ok := catalog[name]; ok {
		return m, nil
	}
	for k, m := range catalog {
		if strings.EqualFold(k, name) {
			return m, nil
		}
	}
	for alias, k := range catalogAliases {
		if strings.EqualFold(alias, name) {
			return catalog[k], nil
		}
	}
	return GPUModel{}, fmt.Errorf("unknown GPU model %q (known: %s)", name, strings.Join(ModelNames(), ", "))
}

// ModelNames lists the catalog's model names in order.
func ModelNames() []string {
	names := make([]string, 0, len(catalog))
	for k := range catalog {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// activeShare places a busy GPU's floor power between idle and max: a GPU
// running any job leaves its idle power state (clocks and memory come up
// with the first context), so it draws idle + activeShare × (max − idle)
// before its utilisation adds anything. 0.2 puts an A100's floor at 124 W
// against 55 W idle; an assumption, not a vendor figure (datasheets give
// neither number), stated so that a busy-but-light GPU is not as cheap as
// an idle one — which is what makes spreading light jobs cost energy.
const activeShare = 0.2

// Power returns the board power in watts at the given summed utilisation
// (percent; capped at 100): idle power when nothing runs, otherwise linear
// from the active floor (see activeShare) to max power.
func (m GPUModel) Power(util float64, busy bool) float64 {
	if !busy {
		return m.IdleWatts
	}
	if util > 100 {
		util = 100
	}
	if util < 0 {
		util = 0
	}
	floor := m.IdleWatts + activeShare*(m.MaxWatts-m.IdleWatts)
	return floor + (m.MaxWatts-floor)*util/100
}
