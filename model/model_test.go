package model

import (
	"strings"
	"testing"
	"time"
)

func TestParseBytes(t *testing.T) {
	cases := []struct {
		in   string
		want Bytes
		err  string
	}{
		{"20GB", 20 << 30, ""}, // memory: a GB is 2^30 bytes, as on the GPU ("A100 40GB")
		{"38GiB", 38 << 30, ""},
		{"512MiB", 512 << 20, ""},
		{"1.5GiB", 3 << 29, ""},
		{"4096", 4096, ""},
		{"12 GiB", 12 << 30, ""},
		{"-3GB", 0, "negative"},
		{"lots", 0, "not a size"},
		{"3XB", 0, "unknown unit"},
		{"", 0, "empty"},
	}
	for _, tc := range cases {
		got, err := ParseBytes(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseBytes(%q) error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

// A "38GB" job fits an "A100 40GB", which has 40 GB of 2^30 bytes.
func TestCatalogHoldsRealCapacity(t *testing.T) {
	m, err := LookupModel("A100-40GB")
	if err != nil {
		t.Fatal(err)
	}
	if m.VRAM != 40*GiB || 38*GB > m.VRAM {
		t.Fatalf("A100-40GB has %d bytes", m.VRAM)
	}
	for _, name := range []string{"A100-80GB", "H100-80GB", "H200-141GB", "V100-16GB", "V100-32GB", "T4-16GB", "P100-16GB", "A10-24GB", "L4-24GB", "G2", "G3", "V100M16", "T4"} {
		m, err := LookupModel(name)
		if err != nil || m.VRAM <= 0 || m.Speed <= 0 || m.MaxWatts <= m.IdleWatts || m.Source == "" {
			t.Errorf("catalog entry %q incomplete: %+v %v", name, m, err)
		}
	}
}

func TestParseGPUs(t *testing.T) {
	s, err := ParseGPUs(DefaultGPUs)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Nodes) != 2 || len(s.Nodes[0].GPUs) != 6 || len(s.Nodes[1].GPUs) != 2 {
		t.Fatalf("default shape: %+v", s)
	}
	if s.Nodes[1].ID != "node-1" || s.Nodes[1].GPUs[0].ID != "gpu-6" || s.Nodes[1].GPUs[1].Model.Name != "A100-80GB" {
		t.Fatalf("node-1 = %+v", s.Nodes[1])
	}
	big, err := ParseGPUs("100xA100-80GB")
	if err != nil || big.GPUCount() != 100 || len(big.Nodes) != 13 || len(big.Nodes[12].GPUs) != 4 {
		t.Fatalf("100 GPUs: %d GPUs on %d nodes, %v", big.GPUCount(), len(big.Nodes), err)
	}
	for _, bad := range []string{"6", "0xA100-40GB", "3xTPU", "x"} {
		if _, err := ParseGPUs(bad); err == nil || !strings.Contains(err.Error(), "--gpus") {
			t.Errorf("ParseGPUs(%q) error %v, want one naming --gpus", bad, err)
		}
	}
}

// TestExactReadsBack: a size written with Exact parses to the same bytes.
func TestExactReadsBack(t *testing.T) {
	for b, want := range map[Bytes]string{38 * GB: "38GB", 12 * GiB: "12GB", 1536 * MiB: "1536MB", 1024: "1KB", 1000: "1000B", 0: "0B", 3 * TiB: "3TB"} {
		got := b.Exact()
		back, err := ParseBytes(got)
		if got != want || err != nil || back != b {
			t.Errorf("%d bytes: %q (reads back %d, %v), want %q", b, got, back, err, want)
		}
	}
}

func TestKeptProgress(t *testing.T) {
	if got := KeptProgress(1750, 10*time.Minute); got != 1200 {
		t.Fatalf("1750s with 10m checkpoints keeps %v, want 1200", got)
	}
	if got := KeptProgress(1750, 0); got != 0 {
		t.Fatalf("no checkpoints keeps %v, want 0", got)
	}
}

// TestAStringDecodesTheSameWithOrWithoutEscapes: a plain JSON string is
// read from its bytes (the fast path), one with escapes or non-ASCII by
// encoding/json; both give the same value, and a bad escape is an error.
func TestAStringDecodesTheSameWithOrWithoutEscapes(t *testing.T) {
	for _, c := range []struct{ plain, escaped string }{
		{`"high"`, `"hi\u0067h"`},
		{`"12GiB"`, `"12\u0047iB"`},
		{`"1.5 GB"`, `"1.5\u0020GB"`},
	} {
		var p1, p2 Priority
		var b1, b2 Bytes
		e1, e2 := p1.UnmarshalJSON([]byte(c.plain)), p2.UnmarshalJSON([]byte(c.escaped))
		f1, f2 := b1.UnmarshalJSON([]byte(c.plain)), b2.UnmarshalJSON([]byte(c.escaped))
		if (e1 == nil) != (e2 == nil) || p1 != p2 || (f1 == nil) != (f2 == nil) || b1 != b2 {
			t.Errorf("%s vs %s: priority %v/%v (%v, %v), bytes %v/%v (%v, %v)", c.plain, c.escaped, p1, p2, e1, e2, b1, b2, f1, f2)
		}
	}
	for _, bad := range []string{`"hi\gh"`, `"high`, "\"hi\x01gh\""} {
		var p Priority
		if err := p.UnmarshalJSON([]byte(bad)); err == nil {
			t.Errorf("%q read as %v", bad, p)
		}
	}
}
