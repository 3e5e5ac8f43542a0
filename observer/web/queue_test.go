package web_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpusched/gpusched/model"
)

// TestDashboardSwitchesTheQueueOrder (issue 45 item 8): the page has a
// queue-order control whose note says what the order in force does;
// choosing another switches the cluster's queue order; the tables'
// headers and priority cells explain themselves on hover.
func TestDashboardSwitchesTheQueueOrder(t *testing.T) {
	exe := chromium(t)
	url, nc := startDashboard(t, model.DefaultGPUs)
	ctx := browser(t, exe)
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS(`#queue-order option[value="srtf"]`)),
		chromedp.WaitVisible(chromedp.Search(`//div[@id="queue-note" and string-length(normalize-space(.)) > 20]`))); err != nil {
		t.Fatalf("no queue-order control with its note: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](
		`void (document.querySelector("#queue-order").value = "srtf", document.querySelector("#queue-order").dispatchEvent(new Event("change")))`)); err != nil {
		t.Fatal(err)
	}
	var queue string
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && queue != "srtf" {
		msg, err := nc.Request("gpusched.sched.strategy", []byte(`{}`), time.Second)
		if err == nil {
			var rep struct {
				Queue string `json:"queue"`
			}
			json.Unmarshal(msg.Data, &rep)
			queue = rep.Queue
		}
		if queue != "srtf" {
			time.Sleep(20 * time.Millisecond) // polling the cluster until the deadline
		}
	}
	if queue != "srtf" {
		t.Fatalf("the cluster's queue order is %q after choosing srtf on the page", queue)
	}
	note, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#queue-note`)))
	if err != nil {
		t.Fatal(err)
	}
	titles, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#running th, #queue th")].map((e) => e.title)`))
	if err != nil {
		t.Fatal(err)
	}
	for i, title := range titles {
		if title == "" {
			t.Errorf("table header %d has no hover text", i)
		}
	}
	if len(titles) < 12 || !strings.Contains(note, "least work left") {
		t.Errorf("%d headers; queue note %q (want SRTF's)", len(titles), note)
	}
}
