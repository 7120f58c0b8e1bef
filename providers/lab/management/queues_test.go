package management

import (
	"math"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/utils/ptr"
)

// families is a registry's reading: one queue's adds, retries and wait
// histogram (buckets 0.1, 1, +Inf), and a metric of another kind.
func families(adds, retries float64, waits []float64) []*dto.MetricFamily {
	name := []*dto.LabelPair{{Name: ptr.To("name"), Value: ptr.To("kubeadmcontrolplane")}}
	h := &dto.Histogram{}
	bounds := []float64{0.1, 1, math.Inf(1)}
	counts := make([]uint64, len(bounds))
	for _, w := range waits {
		h.SampleCount = ptr.To(h.GetSampleCount() + 1)
		h.SampleSum = ptr.To(h.GetSampleSum() + w)
		for i, b := range bounds {
			if w <= b {
				counts[i]++
			}
		}
	}
	for i, b := range bounds {
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: ptr.To(b), CumulativeCount: ptr.To(counts[i])})
	}
	return []*dto.MetricFamily{
		{Name: ptr.To("workqueue_adds_total"), Metric: []*dto.Metric{{Label: name, Counter: &dto.Counter{Value: ptr.To(adds)}}}},
		{Name: ptr.To("workqueue_retries_total"), Metric: []*dto.Metric{{Label: name, Counter: &dto.Counter{Value: ptr.To(retries)}}}},
		{Name: ptr.To("workqueue_queue_duration_seconds"), Metric: []*dto.Metric{{Label: name, Histogram: h}}},
		{Name: ptr.To("rest_client_requests_total"), Metric: []*dto.Metric{{Counter: &dto.Counter{Value: ptr.To(7.0)}}}},
	}
}

func TestQueuesSince(t *testing.T) {
	before := queuesOf(families(10, 1, []float64{0.05, 0.05}))
	after := queuesOf(families(14, 3, []float64{0.05, 0.05, 0.05, 0.5, 0.5, 0.71}))
	uses := after.Since(before)
	if len(uses) != 1 {
		t.Fatalf("uses = %+v, want the one queue", uses)
	}
	u := uses[0]
	// The four waits after: 0.05, 0.5, 0.5, 0.71; 90% of them within 1 s.
	want := QueueUse{Controller: "kubeadmcontrolplane", Adds: 4, Retries: 2, MeanWaitSeconds: 0.44, P90WaitSeconds: 1}
	if u != want {
		t.Errorf("since = %+v, want %+v", u, want)
	}
	if got := after.Since(after); len(got) != 0 {
		t.Errorf("a queue that added nothing: %+v", got)
	}
}
