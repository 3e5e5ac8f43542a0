package observer

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/events"
)

// TestEveryControlExplainsItself: every data-help key the web page (its
// HTML and script) names has a text; every registered policy and queue
// order has its trade-off; the terminal dashboard's help lists them all.
func TestEveryControlExplainsItself(t *testing.T) {
	texts := HelpTexts()
	re := regexp.MustCompile(`data-help="([a-z_:-]+)"|\["[a-z ]+", [^\]]*, "([a-z_:-]+)"\]`)
	found := 0
	for _, f := range []string{"web/assets/index.html", "web/assets/app.js"} {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			key := m[1] + m[2]
			if strings.Contains(key, "${") || key == "" {
				continue
			}
			found++
			if texts[key] == "" {
				t.Errorf("%s names the explanation %q, which has no text", f, key)
			}
		}
	}
	if found < 20 {
		t.Fatalf("only %d data-help keys found in the page: the pattern no longer matches it", found)
	}
	if missing := unexplained(); len(missing) > 0 {
		t.Errorf("without a trade-off text: %v", missing)
	}
	for k, v := range texts {
		if n := strings.Count(v, ". ") + 1; n > 3 || len(v) > 260 {
			t.Errorf("%s: %d sentences, %d characters: one or two plain sentences", k, n, len(v))
		}
	}
}

// TestAPinnedPlacementSaysSo (issue 45 item 6): a pinned placement's
// explanation says the submission chose the GPU and where the policy
// alone would have put the job; an unpinned one says nothing of pins.
func TestAPinnedPlacementSaysSo(t *testing.T) {
	d := events.Decision{JobID: "j", Policy: "binpack", GPUs: []string{"gpu-1"}, Pinned: "gpu-1", Unpinned: "gpu-4"}
	if got := PinNote(d); !strings.Contains(got, "pinned it there") || !strings.Contains(got, "binpack alone would have chosen gpu-4") {
		t.Errorf("note %q", got)
	}
	d.Unpinned = ""
	if got := PinNote(d); !strings.Contains(got, "no other place") {
		t.Errorf("note %q, want it to say nowhere else fitted", got)
	}
	if got := PinNote(events.Decision{JobID: "j", Policy: "binpack", GPUs: []string{"gpu-1"}}); got != "" {
		t.Errorf("an unpinned placement's note %q", got)
	}
}
