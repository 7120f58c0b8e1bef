package management

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"time"
)

// stopGrace is how long the controllers have to finish their reconciles
// when the plane stops: the in-process manager's graceful shutdown
// timeout, and the time its webhook server gives its requests.
const stopGrace = time.Minute

// busyMarkers are the frames of a goroutine doing a controller's work: a
// reconcile, or a webhook's request.
var busyMarkers = []string{").reconcileHandler(", "admission.(*Webhook).ServeHTTP(", "conversion.(*webhook).ServeHTTP("}

// maxBusyReport bounds the text busyGoroutines returns.
const maxBusyReport = 8 << 10

// busyGoroutines is what this process's controllers were doing when they
// did not stop in time: the first frames of each goroutine in a reconcile
// or a webhook request, the same stacks once, so a stop that hangs on a
// machine we cannot log into (CI) names the call it hangs in.
func busyGoroutines() string {
	buf := make([]byte, 1<<22)
	return busyIn(buf[:runtime.Stack(buf, true)])
}

// busyIn is busyGoroutines of the stacks of runtime.Stack: each
// different stack once, with how many goroutines were in it.
func busyIn(buf []byte) string {
	var order []string
	header := map[string]string{}
	count := map[string]int{}
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if !busy(g) {
			continue
		}
		head, frames := topFrames(string(g), 12)
		if count[frames] == 0 {
			order = append(order, frames)
			header[frames] = head
		}
		count[frames]++
	}
	var out strings.Builder
	for _, frames := range order {
		if out.Len()+len(frames) > maxBusyReport {
			out.WriteString("(more left out)\n")
			break
		}
		fmt.Fprintf(&out, "%s (%d like it)\n%s\n", header[frames], count[frames], frames)
	}
	return out.String()
}

// busy tells whether the stack of one goroutine is in a controller's work.
func busy(g []byte) bool {
	for _, m := range busyMarkers {
		if bytes.Contains(g, []byte(m)) {
			return true
		}
	}
	return false
}

// topFrames is the goroutine's header line ("goroutine 7 [select]:") and
// the function names of its first n frames, without their arguments and
// files.
func topFrames(g string, n int) (string, string) {
	lines := strings.Split(strings.TrimSpace(g), "\n")
	var frames []string
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "\t") {
			continue
		}
		if i := strings.LastIndex(l, "("); i > 0 {
			l = l[:i]
		}
		frames = append(frames, "  "+l)
		if len(frames) == n {
			break
		}
	}
	return strings.TrimSuffix(lines[0], ":"), strings.Join(frames, "\n")
}
